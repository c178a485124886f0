/**
 * The external conformance run (test/conformance): `npm run test:conformance`, a step of its own in CI (.ci/run),
 * after scripts/python-tools.sh has installed Schemathesis into .venv-tools/.
 */
const base = require('./jest.config');

/** @type {import('jest').Config} */
module.exports = {
  ...base,
  testPathIgnorePatterns: ['/node_modules/'],
  roots: ['<rootDir>/test/conformance'],
  maxWorkers: 1,
  testTimeout: 600_000,
};

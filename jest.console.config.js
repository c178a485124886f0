/**
 * The console's browser tests (test/console): `npm run test:console`, a step of its own in CI (.ci/run) after
 * scripts/install-system-packages.sh, since they need Debian's chromium. One stack, one browser, one file at a time.
 */
const base = require('./jest.config');

/** @type {import('jest').Config} */
module.exports = {
  ...base,
  testPathIgnorePatterns: ['/node_modules/'],
  roots: ['<rootDir>/test/console'],
  maxWorkers: 1,
};

/**
 * Load tests (test/load): `npm run test:load`, a step of its own in CI (.ci/run), one file at a time, on their own
 * server. Each prints its phases with their durations, and a phase over its budget fails naming it (test/helpers/phases.ts).
 */
const base = require('./jest.config');

/** @type {import('jest').Config} */
module.exports = {
  ...base,
  testPathIgnorePatterns: ['/node_modules/'],
  roots: ['<rootDir>/test/load'],
  maxWorkers: 1,
};

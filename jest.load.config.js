/** Load tests (test/load): run by `npm test` after the main suite, one file at a time, on their own server. */
const base = require('./jest.config');

/** @type {import('jest').Config} */
module.exports = {
  ...base,
  testPathIgnorePatterns: ['/node_modules/'],
  roots: ['<rootDir>/test/load'],
  maxWorkers: 1,
};

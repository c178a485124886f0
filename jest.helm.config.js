/**
 * The Helm chart's tests (test/deploy/helm-chart.test.ts): `npm run test:helm` (scripts/test-helm.sh), after the
 * chart's lint and schema validation. No Temporal dev server (jest.config.js's global set-up): the tests render
 * manifests only. `npm test` runs the same file with the rest of the suite.
 */
const { globalSetup, globalTeardown, ...base } = require('./jest.config');

/** @type {import('jest').Config} */
module.exports = {
  ...base,
  testPathIgnorePatterns: ['/node_modules/'],
  roots: ['<rootDir>/test/deploy'],
  testMatch: ['**/helm-chart.test.ts'],
};

/**
 * One jest configuration, five projects, each run by its own npm script (`--selectProjects <name>`); a run that
 * selects none gets `default` (scripts/jest.mjs).
 * - default (`npm test`): every test/**\/*.test.ts but the folders of the projects below.
 * - load (`npm run test:load`, test/load): thousands of workflows each, which would slow the whole-stack tests beside
 *   them; run alone, one file at a time, so `npm test` stays within 10 minutes.
 * - console (`npm run test:console`, test/console): the browser tests, which need Debian's chromium.
 * - conformance (`npm run test:conformance`, test/conformance): Schemathesis, installed by scripts/python-tools.sh.
 * - helm (`npm run test:helm`, after scripts/test-helm.sh's lint and schema checks): the chart's tests, which render
 *   manifests only, so no Temporal dev server. `npm test` runs the same file with the rest of the suite.
 * Worker counts and test timeouts are jest's global options, not a project's: those scripts pass theirs.
 */

/** What every project shares. */
const base = {
  testEnvironment: 'node',
  testMatch: ['**/*.test.ts'],
  transform: {
    // tsconfig's isolatedModules makes ts-jest transpile only (much faster); type-checking is `npm run lint`'s job.
    '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }],
  },
  setupFiles: ['<rootDir>/test/setup/quiet-runtime.ts'],
};

/** The suite's one real Temporal dev server (test/setup/global-setup.ts). */
const devServer = {
  globalSetup: '<rootDir>/test/setup/global-setup.ts',
  globalTeardown: '<rootDir>/test/setup/global-teardown.ts',
};

/** @type {import('jest').Config} */
module.exports = {
  projects: [
    {
      ...base,
      ...devServer,
      displayName: 'default',
      roots: ['<rootDir>/test'],
      testPathIgnorePatterns: [
        '/node_modules/',
        '<rootDir>/test/load/',
        '<rootDir>/test/console/',
        '<rootDir>/test/conformance/',
      ],
    },
    { ...base, ...devServer, displayName: 'load', roots: ['<rootDir>/test/load'] },
    { ...base, ...devServer, displayName: 'console', roots: ['<rootDir>/test/console'] },
    { ...base, ...devServer, displayName: 'conformance', roots: ['<rootDir>/test/conformance'] },
    { ...base, displayName: 'helm', roots: ['<rootDir>/test/deploy'], testMatch: ['**/helm-chart.test.ts'] },
  ],
  // Real servers and workflow bundling: generous per-test timeout; each test sets tighter waits itself.
  testTimeout: 120_000,
  maxWorkers: 2,
  verbose: true,
  // PAYLATER_TEST_RESULTS=<file>: the run's counts as `--json` writes them, for CI's closing line (.ci/run).
  reporters: [
    'default',
    ...(process.env.PAYLATER_TEST_RESULTS
      ? [['<rootDir>/test/setup/results-file-reporter.cjs', { file: process.env.PAYLATER_TEST_RESULTS }]]
      : []),
  ],
};

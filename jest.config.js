/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  // Load tests run under their own script, alone (`npm run test:load`, jest.load.config.js): their thousands of
  // workflows would slow the whole-stack tests running beside them, and `npm test` stays within 10 minutes.
  // The console's browser tests need Chromium: `npm run test:console` (jest.console.config.js). The conformance run
  // (test/conformance, jest.conformance.config.js) needs Schemathesis: `npm run test:conformance`.
  testPathIgnorePatterns: [
    '/node_modules/',
    '<rootDir>/test/load/',
    '<rootDir>/test/console/',
    '<rootDir>/test/conformance/',
  ],
  transform: {
    // tsconfig's isolatedModules makes ts-jest transpile only (much faster); type-checking is `npm run lint`'s job.
    '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }],
  },
  globalSetup: '<rootDir>/test/setup/global-setup.ts',
  globalTeardown: '<rootDir>/test/setup/global-teardown.ts',
  setupFiles: ['<rootDir>/test/setup/quiet-runtime.ts'],
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

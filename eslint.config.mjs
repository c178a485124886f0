import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { builtinModules } from 'node:module';

const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'packages/*/dist/**',
      'dist-tools/**',
      'dist-test/**',
      'node_modules/**',
      'coverage/**',
      '.venv-tools/**',
      '.temporal/**',
      'data/**',
      '**/*.js',
      '**/*.mjs',
      '**/*.cjs',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'error',
    },
  },
  {
    // A function of the service reads in one screenful or becomes named pieces (CONTRIBUTING.md).
    files: ['src/**/*.ts'],
    rules: { 'max-lines-per-function': ['error', { max: 120 }] },
  },
  {
    // The determinism boundary (CONTRIBUTING.md, "Workflow code is deterministic"): workflow code may import only
    // @temporalio/workflow, type-only activities, and src/shared.
    files: ['src/workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            ...nodeBuiltins.map((name) => ({
              name,
              message: 'Node built-ins are not deterministic: keep them out of workflows.',
            })),
            { name: 'zod', message: 'Validate on the activity/API side, not in workflows.' },
            { name: 'undici', message: 'HTTP belongs in activities.' },
            { name: 'express', message: 'HTTP belongs in src/api.' },
            { name: 'pino', message: 'Use log from @temporalio/workflow (replay-aware).' },
            { name: '@temporalio/activity', message: 'Workflows cannot use activity APIs.' },
            { name: '@temporalio/client', message: 'Workflows cannot use the client.' },
            { name: '@temporalio/worker', message: 'Workflows cannot use the worker.' },
          ],
          patterns: [
            {
              group: ['**/activities', '**/activities/*', '!**/activities/types'],
              message: 'Use `import type` from activities only.',
              allowTypeImports: true,
            },
            {
              group: ['**/api/**', '**/sandbox/**', '**/config', '**/config/**'],
              message: 'Outside the determinism boundary.',
            },
          ],
        },
      ],
      'no-restricted-globals': [
        'error',
        { name: 'process', message: 'No process.env or process.* in workflows.' },
        { name: 'setTimeout', message: 'Use sleep() or condition() from @temporalio/workflow.' },
        { name: 'setInterval', message: 'Use sleep() from @temporalio/workflow.' },
      ],
      'no-restricted-properties': [
        'error',
        {
          object: 'Date',
          property: 'now',
          message: 'Use workflow time via Date (deterministic in the sandbox) sparingly; prefer inputs.',
        },
      ],
      'no-console': 'error',
    },
  },
  {
    files: ['test/**/*.ts', 'tools/**/*.ts', 'scripts/**/*.ts'],
    rules: {
      'no-console': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/unbound-method': 'off',
    },
  },
);

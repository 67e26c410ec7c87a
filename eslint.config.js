// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import ferry from './tools/eslint/package-boundaries.js';

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', '**/.turbo/**', '**/coverage/**', '.tmp/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', URL: 'readonly', performance: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setImmediate: 'readonly' } },
    plugins: { ferry },
    rules: {
      'ferry/package-boundaries': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      // The clock is injected: wall time and real timers belong to the clock implementation only.
      'no-restricted-properties': ['error', { object: 'Date', property: 'now', message: 'Use the injected clock.' }],
    },
  },
  {
    files: ['packages/core/src/common/clock.ts', '**/*.test.ts', 'bench/**', 'scripts/**', 'tools/**', '**/embedded-postgres.ts'],
    rules: { 'no-restricted-properties': 'off' },
  },
  // The console's page runs in a browser, where there is no engine clock to inject: "3 min ago"
  // is measured against the user's own clock. Nor is there Node: its type check takes Node's
  // globals in with @ferry/core's types (through the types of core's dependencies), so this rule
  // is what keeps them out of the page's code.
  {
    files: ['packages/console/src/app/**'],
    languageOptions: { globals: { window: 'readonly', document: 'readonly', history: 'readonly', sessionStorage: 'readonly', fetch: 'readonly', crypto: 'readonly' } },
    rules: {
      'no-restricted-properties': 'off',
      'no-restricted-globals': ['error', ...['process', 'Buffer', 'global', 'require', 'module', '__dirname', '__filename', 'setImmediate', 'clearImmediate'].map((name) => ({ name, message: 'The console runs in a browser: Node is not there.' }))],
    },
  },
);

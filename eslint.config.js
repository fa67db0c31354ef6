import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * Imports a module of one layer may not make, with why. (A file matched by several blocks gets
 * the last block's list, so every list repeats the rules that hold everywhere.)
 */
const restrictedImports = (patterns) => ['error', { patterns: [...patterns, NO_OPENTELEMETRY] }];

/** OpenTelemetry is loaded only when tracing is on, through src/tracing/tracer.ts. */
const NO_OPENTELEMETRY = {
  group: ['@opentelemetry/*', 'bullmq-otel'],
  message: 'Only src/tracing/otel.ts imports OpenTelemetry; use src/tracing/tracer.ts.',
};

export default tseslint.config(
  { ignores: ['dist/', 'dist-bench/', 'node_modules/', 'coverage/', '.cache/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: { process: 'readonly', console: 'readonly', URL: 'readonly' },
    },
    rules: {
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
    },
  },
  {
    // Type-aware rules: a promise nobody awaits loses its errors; one passed where a callback
    // returning nothing is expected (an event listener, say) does too.
    files: ['src/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
    },
  },
  {
    // Configuration is read once, in src/config.ts; everything else gets it passed down.
    files: ['src/**/*.ts'],
    ignores: ['src/config.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        {
          object: 'process',
          property: 'env',
          message: 'Read configuration through src/config.ts.',
        },
      ],
    },
  },
  {
    // The command line sits on top: nothing imports it.
    files: ['src/**/*.ts'],
    ignores: ['src/cli/**', 'src/tracing/otel.ts'],
    rules: {
      'no-restricted-imports': restrictedImports([
        {
          group: ['**/cli/*', '**/cli/**'],
          message: 'Nothing imports the command line (src/cli).',
        },
      ]),
    },
  },
  {
    // Signature schemes and payloads are pure: no framework, no queue, no Redis.
    files: ['src/webhooks/**/*.ts'],
    rules: {
      'no-restricted-imports': restrictedImports([
        { group: ['express', 'express/*'], message: 'src/webhooks knows nothing of Express.' },
        { group: ['bullmq', 'bullmq/*'], message: 'src/webhooks knows nothing of BullMQ.' },
        { group: ['ioredis', 'ioredis/*'], message: 'src/webhooks knows nothing of Redis.' },
        {
          group: ['**/cli/*', '**/cli/**'],
          message: 'Nothing imports the command line (src/cli).',
        },
      ]),
    },
  },
  {
    // Similarity scoring and grouping are pure functions: no framework, no queue, no Redis. Where
    // their results are kept in Redis is src/grouping.
    files: ['src/similar/**/*.ts'],
    rules: {
      'no-restricted-imports': restrictedImports([
        { group: ['express', 'express/*'], message: 'src/similar knows nothing of Express.' },
        { group: ['bullmq', 'bullmq/*'], message: 'src/similar scoring knows nothing of BullMQ.' },
        { group: ['ioredis', 'ioredis/*'], message: 'src/similar scoring knows nothing of Redis.' },
        {
          group: ['**/worker/*', '**/worker/**', '**/http/*', '**/http/**'],
          message: 'src/similar knows nothing of the worker or the console that use it.',
        },
        {
          group: ['**/grouping/*', '**/grouping/**', '**/queue/*', '**/queue/**'],
          message: 'src/similar knows nothing of where grouping is kept (src/grouping, Redis).',
        },
        {
          group: ['**/cli/*', '**/cli/**'],
          message: 'Nothing imports the command line (src/cli).',
        },
      ]),
    },
  },
  {
    // Pages and their API read runs through src/runs, never through the worker that makes them.
    files: ['src/http/**/*.ts', 'src/runs/**/*.ts'],
    rules: {
      'no-restricted-imports': restrictedImports([
        {
          group: ['**/worker/*', '**/worker/**', '**/worker-process.js'],
          message:
            'src/http and src/runs know nothing of the worker (src/worker) that runs handlers.',
        },
        {
          group: ['**/cli/*', '**/cli/**'],
          message: 'Nothing imports the command line (src/cli).',
        },
      ]),
    },
  },
  {
    // Grouping in Redis is written by the worker and read by the console: it knows neither.
    files: ['src/grouping/**/*.ts'],
    rules: {
      'no-restricted-imports': restrictedImports([
        { group: ['express', 'express/*'], message: 'src/grouping knows nothing of Express.' },
        {
          group: ['**/worker/*', '**/worker/**', '**/http/*', '**/http/**'],
          message: 'src/grouping knows nothing of the worker or the console that use it.',
        },
        {
          group: ['**/cli/*', '**/cli/**'],
          message: 'Nothing imports the command line (src/cli).',
        },
      ]),
    },
  },
  {
    // The delivery history is written by the worker and read by the console: it knows neither.
    files: ['src/history/**/*.ts'],
    rules: {
      'no-restricted-imports': restrictedImports([
        { group: ['express', 'express/*'], message: 'src/history knows nothing of Express.' },
        {
          group: ['**/worker/*', '**/worker/**', '**/http/*', '**/http/**'],
          message: 'src/history knows nothing of the worker or the console that use it.',
        },
        {
          group: ['**/cli/*', '**/cli/**'],
          message: 'Nothing imports the command line (src/cli).',
        },
      ]),
    },
  },
  {
    files: ['src/cli/**/*.ts'],
    rules: { 'no-restricted-imports': restrictedImports([]) },
  },
  {
    // The logger is built before configuration is read, and configuration errors are logged.
    files: ['src/logger.ts'],
    rules: {
      'no-restricted-imports': restrictedImports([
        { group: ['./config.js'], message: 'logger.ts does not depend on config.ts.' },
      ]),
    },
  },
);

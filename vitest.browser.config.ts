import { defineConfig } from 'vitest/config';

/**
 * `npm run test:browser`: the pages in a real Chromium (Debian's `chromium` package, driven by
 * playwright-core). Apart from `npm test` because it needs the browser installed.
 */
export default defineConfig({
  test: {
    include: ['test/browser/**/*.test.ts'],
    globalSetup: ['test/helpers/global-setup.ts'],
    reporters: ['default', './test/helpers/summary-reporter.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});

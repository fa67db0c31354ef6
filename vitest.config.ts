import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Each runs on its own: npm run test:reliability, npm run test:browser (needs Chromium).
    exclude: [...configDefaults.exclude, 'test/reliability/**', 'test/browser/**'],
    globalSetup: ['test/helpers/global-setup.ts'],
    reporters: ['default', './test/helpers/summary-reporter.ts'],
    testTimeout: 20_000,
    hookTimeout: 20_000,
  },
});

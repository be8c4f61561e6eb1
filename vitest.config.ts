import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    reporters: ['default', './test/support/shared-data-reporter.ts'],
    // Suites that load a Temporal worker need forks (the SDK's own tests avoid worker threads).
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});

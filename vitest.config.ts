import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    reporters: ['default', './test/support/shared-data-reporter.ts'],
    // Suites that load a Temporal worker need forks (the SDK's own tests avoid worker threads).
    pool: 'forks',
    // Most files wait on PostgreSQL, Temporal, child processes and timers more than they compute (the kill-point
    // test sleeps through most of its six minutes): two files at once even on two cores, where vitest's default
    // (the cores less one) would run them one after the other.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});

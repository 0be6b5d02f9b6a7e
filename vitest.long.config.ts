import { defineConfig } from 'vitest/config';

/** The long real-process checks (`npm run test:long`): train rl on the cluster layout, under faults. */
export default defineConfig({
  test: {
    include: ['test/long/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
  },
});

import { defineProject } from 'vitest/config';

export default defineProject({
  resolve: { conditions: ['@disarm/source'] },
  ssr: { resolve: { conditions: ['@disarm/source'] } },
  test: {
    name: 'examples',
    testTimeout: 60_000,
    hookTimeout: 120_000,
    include: ['test/**/*.test.ts'],
    // The streaming test forces collections to measure what stays alive, not what awaits one.
    execArgv: ['--expose-gc'],
  },
});

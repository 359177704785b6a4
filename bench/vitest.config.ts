import { defineProject } from 'vitest/config';

export default defineProject({
  resolve: { conditions: ['@disarm/source'] },
  ssr: { resolve: { conditions: ['@disarm/source'] } },
  test: {
    name: 'bench',
    testTimeout: 120_000,
    hookTimeout: 120_000,
    include: ['*.test.ts', 'real-corpus/**/*.test.ts'],
  },
});

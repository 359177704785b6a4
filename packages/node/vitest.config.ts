import { defineProject } from 'vitest/config';

export default defineProject({
  resolve: { conditions: ['@disarm/source'] },
  ssr: { resolve: { conditions: ['@disarm/source'] } },
  test: {
    name: 'node',
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
  },
});

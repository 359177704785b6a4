import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: {
    conditions: ['@disarm/source'],
  },
  ssr: {
    resolve: {
      conditions: ['@disarm/source'],
    },
  },
  test: {
    projects: ['packages/*', 'examples', 'bench', 'fuzz'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});

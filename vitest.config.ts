import { defineConfig } from 'vitest/config';

// Each project's settings (budgets included) come from `vitest.shared.ts`.
export default defineConfig({
  resolve: { conditions: ['@disarm/source'] },
  ssr: { resolve: { conditions: ['@disarm/source'] } },
  test: {
    projects: ['packages/*', 'examples', 'bench', 'fuzz'],
  },
});

import { defineDisarmProject } from '../vitest.shared.ts';

export default defineDisarmProject('bench', {
  include: ['*.test.ts', 'real-corpus/**/*.test.ts'],
  quietTestTimeoutMs: 120_000,
});

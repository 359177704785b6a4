import { defineDisarmProject } from '../vitest.shared.ts';

export default defineDisarmProject('fuzz', { quietTestTimeoutMs: 120_000 });

import { defineDisarmProject } from '../../vitest.shared.ts';

export default defineDisarmProject('node');

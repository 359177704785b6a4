import { defineDisarmProject } from '../vitest.shared.ts';

export default defineDisarmProject('examples', {
  include: ['test/**/*.test.ts'],
  // The streaming test forces collections to measure what stays alive, not what awaits one.
  execArgv: ['--expose-gc'],
});

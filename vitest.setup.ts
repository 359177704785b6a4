// Runs before every test file of every project (`vitest.shared.ts`): the file's default budgets
// follow the machine's load when the file starts, so a busy machine makes the suite slower, not
// red. Tests that wait longer scale their own budgets with `scaledMs`.
import { scaledMs } from '@disarm/fixtures/time-budget';
import { vi } from 'vitest';

import {
  QUIET_HOOK_TIMEOUT_ENV,
  QUIET_HOOK_TIMEOUT_MS,
  QUIET_TEST_TIMEOUT_ENV,
  QUIET_TEST_TIMEOUT_MS,
} from './vitest.shared.ts';

vi.setConfig({
  testTimeout: scaledMs(Number(process.env[QUIET_TEST_TIMEOUT_ENV] ?? QUIET_TEST_TIMEOUT_MS)),
  hookTimeout: scaledMs(Number(process.env[QUIET_HOOK_TIMEOUT_ENV] ?? QUIET_HOOK_TIMEOUT_MS)),
});

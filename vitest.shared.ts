import { fileURLToPath } from 'node:url';

import { defineProject } from 'vitest/config';
import type { TestProjectInlineConfiguration } from 'vitest/config';

/** A test's default budget on a quiet machine; `vitest.setup.ts` scales it by the load. */
export const QUIET_TEST_TIMEOUT_MS = 60_000;
/** A hook's default budget on a quiet machine (servers and clusters start in hooks). */
export const QUIET_HOOK_TIMEOUT_MS = 120_000;
/** How a project's quiet budgets reach `vitest.setup.ts` in its test workers. */
export const QUIET_TEST_TIMEOUT_ENV = 'DISARM_QUIET_TEST_TIMEOUT_MS';
export const QUIET_HOOK_TIMEOUT_ENV = 'DISARM_QUIET_HOOK_TIMEOUT_MS';

const SETUP_FILE = fileURLToPath(new URL('./vitest.setup.ts', import.meta.url));

/** What a project may set beyond its name. */
type ProjectTest = Omit<
  NonNullable<TestProjectInlineConfiguration['test']>,
  'name' | 'testTimeout' | 'hookTimeout'
>;

/** Options of {@link defineDisarmProject}. */
export interface DisarmProjectOptions extends ProjectTest {
  /** A test's budget on a quiet machine. @default {@link QUIET_TEST_TIMEOUT_MS} */
  readonly quietTestTimeoutMs?: number;
  /** A hook's budget on a quiet machine. @default {@link QUIET_HOOK_TIMEOUT_MS} */
  readonly quietHookTimeoutMs?: number;
}

/**
 * One vitest project of the workspace: the `@disarm/source` condition (packages consume each
 * other's TypeScript), budgets that scale with the machine's load (`vitest.setup.ts` applies
 * them when each file starts), and the package's tests next to its code and under `test/`.
 */
export function defineDisarmProject(name: string, options: DisarmProjectOptions = {}) {
  const { quietTestTimeoutMs, quietHookTimeoutMs, ...test } = options;
  return defineProject({
    resolve: { conditions: ['@disarm/source'] },
    ssr: { resolve: { conditions: ['@disarm/source'] } },
    test: {
      name,
      include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
      ...test,
      env: {
        ...test.env,
        [QUIET_TEST_TIMEOUT_ENV]: String(quietTestTimeoutMs ?? QUIET_TEST_TIMEOUT_MS),
        [QUIET_HOOK_TIMEOUT_ENV]: String(quietHookTimeoutMs ?? QUIET_HOOK_TIMEOUT_MS),
      },
      setupFiles: [SETUP_FILE, ...toArray(test.setupFiles)],
    },
  });
}

function toArray(value: string | string[] | undefined): string[] {
  if (value === undefined) return [];
  return Array.isArray(value) ? value : [value];
}

import { expect } from 'vitest';

import { defineConformanceSuite } from './conformance/suite.ts';
import { loopbackTarget } from './conformance/_targets.ts';

defineConformanceSuite('over loopback, against a real disarm serve', async () => {
  const [active, stalled] = await Promise.all([
    loopbackTarget({ processing: true }),
    loopbackTarget({ processing: false }),
  ]);
  // A real process on real ports: the suite's raw-HTTP cases (lying Content-Length) run here.
  expect(new URL(active.apiUrl).port).not.toBe(new URL(active.storageUrl).port);
  expect([active.loopback, stalled.loopback]).toEqual([true, true]);
  return { active, stalled };
});

import { expect } from 'vitest';

import { defineConformanceSuite } from './conformance/suite.ts';
import { inProcessTarget } from './conformance/_targets.ts';

defineConformanceSuite('in process, against the fetch handler', async () => {
  const active = await inProcessTarget({ processing: true });
  const stalled = await inProcessTarget({ processing: false });
  // In process means no sockets: requests go straight to the fetch handlers.
  expect([active.loopback, stalled.loopback]).toEqual([false, false]);
  return { active, stalled };
});

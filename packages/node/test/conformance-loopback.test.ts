import { defineConformanceSuite } from './conformance/suite.ts';
import { loopbackTarget } from './conformance/_targets.ts';

defineConformanceSuite('over loopback, against a real disarm serve', async () => {
  const [active, stalled] = await Promise.all([
    loopbackTarget({ processing: true }),
    loopbackTarget({ processing: false }),
  ]);
  return { active, stalled };
});

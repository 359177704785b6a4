import { defineConformanceSuite } from './conformance/suite.ts';
import { inProcessTarget } from './conformance/_targets.ts';

defineConformanceSuite('in process, against the fetch handler', async () => ({
  active: await inProcessTarget({ processing: true }),
  stalled: await inProcessTarget({ processing: false }),
}));

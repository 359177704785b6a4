import { buildImage, buildRawZip } from '@disarm/fixtures';
import type { RawZipEntry } from '@disarm/fixtures';
import { it } from 'vitest';
import { walkZip } from './_internal/zip-walk.ts';
it('dbg', async () => {
  const png = await buildImage('png', { width: 1, height: 1 });
    const entries: RawZipEntry[] = Array.from({ length: 9999 }, (_, i) => ({ name: `p${i}.png`, data: png }));
   const z = buildRawZip(entries);
  for (let i = 0; i < 4; i++) {
  const t = performance.now();
  walkZip(z);
  console.log('walk', performance.now() - t);
  }
}, 60000);

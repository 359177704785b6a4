import { buildImage, buildPowerPoint97, pngBlip, pngChunk, withPngChunks } from '@disarm/fixtures';
import { describe, expect, it } from 'vitest';

import { parseCompoundFile } from '../../../_internal/cfb/read.ts';
import { NO_CLSID } from '../../../_internal/cfb/tree.ts';
import type { CompoundNode } from '../../../_internal/cfb/tree.ts';
import { writeCompoundFile } from '../../../_internal/cfb/write.ts';
import { disarm } from '../../../disarm.ts';
import { engineContext } from '../../../test-support.ts';
import { VerifyFailure } from '../../types.ts';
import { verifyPowerPointBinary } from './verify.ts';

/** A rebuilt presentation's streams, to write back changed. */
async function rebuiltStreams(): Promise<CompoundNode[]> {
  const outcome = await disarm({ bytes: buildPowerPoint97({ texts: ['a'] }), fileName: 'f.ppt' });
  if (outcome.status !== 'cleaned') throw new Error(outcome.detail);
  return [...parseCompoundFile(outcome.bytes, { what: 'x', maxBytes: 1 << 24 }).root.children];
}

function written(children: readonly CompoundNode[]): Uint8Array {
  return writeCompoundFile({
    kind: 'storage',
    name: 'Root Entry',
    clsid: NO_CLSID,
    stateBits: 0,
    children,
  });
}

async function failedCheck(bytes: Uint8Array): Promise<string | undefined> {
  const error: unknown = await verifyPowerPointBinary(
    { bytes, findings: [] },
    engineContext(),
  ).catch((caught: unknown) => caught);
  if (error === undefined) return undefined;
  if (error instanceof VerifyFailure) return error.check;
  throw new Error('verify failed with something other than a VerifyFailure', { cause: error });
}

describe('PowerPoint verify before release', () => {
  it('accepts what the rebuild writes', async () => {
    expect(await failedCheck(written(await rebuiltStreams()))).toBeUndefined();
  });

  it('fails a storage or stream besides the three a presentation needs', async () => {
    const children = await rebuiltStreams();
    const macros: CompoundNode = {
      kind: 'storage',
      name: 'Macros',
      clsid: NO_CLSID,
      stateBits: 0,
      children: [{ kind: 'stream', name: 'dir', content: new Uint8Array(8) }],
    };
    expect(await failedCheck(written([...children, macros]))).toBe('ppt.entries');
  });

  it('fails a Pictures stream holding anything but picture records', async () => {
    const junk = Uint8Array.from([0, 0, 0x34, 0x12, 4, 0, 0, 0, 1, 2, 3, 4]);
    const children = [
      ...(await rebuiltStreams()),
      { kind: 'stream', name: 'Pictures', content: junk } as const,
    ];
    expect(await failedCheck(written(children))).toBe('ppt.pictures');
  });

  it('fails a picture the rebuild did not write', async () => {
    const png = withPngChunks(await buildImage('png'), [pngChunk('tEXt', 'Author\0someone')]);
    const children = [
      ...(await rebuiltStreams()),
      { kind: 'stream', name: 'Pictures', content: pngBlip(png, 0).blip } as const,
    ];
    expect(await failedCheck(written(children))).toBe('ppt.pictures');
  });

  it('fails an embedded OLE object left in the document', async () => {
    const children = (await rebuiltStreams()).map((child) => {
      if (child.kind !== 'stream' || child.name !== 'PowerPoint Document') return child;
      const content = Uint8Array.from(child.content);
      const view = Buffer.from(content.buffer);
      // The document's EndDocumentAtom (0x03EA, empty) retyped as an ExOleEmbedContainer.
      const at = view.indexOf(Buffer.from([0, 0, 0xea, 0x03, 0, 0, 0, 0]));
      view.writeUInt16LE(0x0fcc, at + 2);
      return { ...child, content };
    });
    expect(await failedCheck(written(children))).toBe('ppt.active');
  });
});

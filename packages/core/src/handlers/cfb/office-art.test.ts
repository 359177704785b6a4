import { describe, expect, it } from 'vitest';

import { formatForFileName } from '../../formats.ts';
import { FindingTally } from '../../findings.ts';
import { engineContext } from '../../test-support.ts';
import { Rejection } from '../../_internal/rejection.ts';
import {
  checkBlip,
  MAX_ART_DEPTH,
  readArtRecord,
  rebuildBlip,
  walkArtRecords,
} from './office-art.ts';
import type { PictureRebuild } from './office-art.ts';

/** An OfficeArt record: version and instance, type, then the body ([MS-ODRAW] 2.2.1). */
function record(recInstance: number, recType: number, body: Uint8Array): Buffer {
  const header = Buffer.alloc(8);
  header.writeUInt16LE(recInstance << 4, 0);
  header.writeUInt16LE(recType, 2);
  header.writeUInt32LE(body.length, 4);
  return Buffer.concat([header, body]);
}

/** A container ([MS-ODRAW] 2.2.1 `recVer` 0xF) of `children`. */
function container(recType: number, ...children: Buffer[]): Buffer {
  const out = record(0, recType, Buffer.concat(children));
  out.writeUInt16LE(0xf, 0);
  return out;
}

/** `depth` containers, each the only child of the one before, around one atom. */
function nested(depth: number): Buffer {
  let out = record(0, 0xf00b, Buffer.alloc(4));
  for (let level = 0; level < depth; level += 1) out = container(0xf003, out);
  return out;
}

/** A 2×2 24-bit bitmap without its file header: BITMAPINFOHEADER, then two 8-byte rows. */
function dib(): Buffer {
  const info = Buffer.alloc(40);
  info.writeUInt32LE(40, 0);
  info.writeInt32LE(2, 4);
  info.writeInt32LE(2, 8);
  info.writeUInt16LE(1, 12);
  info.writeUInt16LE(24, 14);
  const bits = Buffer.from([255, 0, 0, 0, 255, 0, 0, 0, 0, 0, 255, 0, 255, 255, 255, 0]);
  return Buffer.concat([info, bits]);
}

function pictureRebuild(findings: FindingTally): PictureRebuild {
  const format = formatForFileName('f.doc');
  if (!format) throw new Error('no .doc row');
  return {
    input: { bytes: new Uint8Array(0), fileName: 'f.doc', format },
    context: engineContext(),
    findings,
  };
}

describe('OfficeArt pictures', () => {
  const uidAndTag = Buffer.alloc(17);
  const limits = engineContext().limits;

  it('keeps a DIB picture as the bitmap the BMP decoder reads, nothing after it', async () => {
    // [MS-ODRAW] 2.2.30 OfficeArtBlipDIB, one UID (recInstance 0x7A8).
    const blip = record(0x7a8, 0xf01f, Buffer.concat([uidAndTag, dib(), Buffer.from('SECRET')]));
    const findings = new FindingTally();
    const rebuilt = await rebuildBlip(
      blip,
      readArtRecord(blip, 0, blip.length, 'x'),
      0,
      pictureRebuild(findings),
    );
    if (!rebuilt) throw new Error('refused');
    expect(
      Buffer.from(rebuilt).equals(record(0x7a8, 0xf01f, Buffer.concat([uidAndTag, dib()]))),
    ).toBe(true);
    expect(findings.toArray()).toEqual([]);
    expect(
      checkBlip(rebuilt, readArtRecord(rebuilt, 0, rebuilt.length, 'x'), limits),
    ).toBeUndefined();
  });

  it('drops a PICT picture, which it cannot rebuild, and counts it', async () => {
    // [MS-ODRAW] 2.2.29 OfficeArtBlipPICT: a Macintosh picture behind a metafile header.
    const blip = record(0x542, 0xf01c, Buffer.concat([Buffer.alloc(50), Buffer.from('PICT')]));
    const findings = new FindingTally();
    const rebuild = pictureRebuild(findings);
    const kept = await rebuildBlip(blip, readArtRecord(blip, 0, blip.length, 'x'), 0, rebuild);
    expect(kept).toBeUndefined();
    expect(findings.toArray()).toEqual([{ kind: 'hidden-data', count: 1 }]);
    expect(checkBlip(blip, readArtRecord(blip, 0, blip.length, 'x'), limits)).toContain('0xf01c');
  });
});

describe('OfficeArt record walk', () => {
  it('visits parents before children, in stream order, each with its parent', () => {
    const bytes = container(
      0xf002,
      container(0xf003, record(0, 0xf009, Buffer.alloc(16)), record(0, 0xf00a, Buffer.alloc(8))),
      record(0, 0xf00b, Buffer.alloc(6)),
    );
    const seen: [number, number | undefined][] = [];
    walkArtRecords(bytes, readArtRecord(bytes, 0, bytes.length, 'x'), 'x', (item, parent) => {
      seen.push([item.recType, parent?.recType]);
    });
    expect(seen).toEqual([
      [0xf002, undefined],
      [0xf003, 0xf002],
      [0xf009, 0xf003],
      [0xf00a, 0xf003],
      [0xf00b, 0xf002],
    ]);
  });

  it('walks containers nested as deep as the limit and refuses one level more', () => {
    const walk = (bytes: Buffer): number => {
      let count = 0;
      walkArtRecords(bytes, readArtRecord(bytes, 0, bytes.length, 'x'), 'x', () => {
        count += 1;
      });
      return count;
    };
    expect(walk(nested(MAX_ART_DEPTH))).toBe(MAX_ART_DEPTH + 1);
    const deeper = nested(MAX_ART_DEPTH + 1);
    expect(() => walk(deeper)).toThrow(Rejection);
    expect(() => walk(deeper)).toThrow(`x nests records more than ${MAX_ART_DEPTH} deep`);
  });

  it('reads every child of a container before visiting the first', () => {
    const bytes = container(
      0xf002,
      record(0, 0xf00b, Buffer.alloc(4)),
      record(0, 0xf00b, Buffer.alloc(4)),
    );
    // The second child's length runs past its container.
    bytes.writeUInt32LE(100, 8 + 12 + 4);
    let visited = 0;
    expect(() => {
      walkArtRecords(bytes, readArtRecord(bytes, 0, bytes.length, 'x'), 'x', () => {
        visited += 1;
      });
    }).toThrow('x has a record at offset 20 whose length runs past the end of its container');
    expect(visited).toBe(1);
  });
});

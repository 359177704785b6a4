import { buildCompoundFile, damageCompoundFile, olefileListing } from '@disarm/fixtures';
import type { CompoundDamage } from '@disarm/fixtures';
import { describe, expect, it } from 'vitest';

import { Rejection } from '../rejection.ts';
import { parseCompoundFile } from './read.ts';
import { NO_CLSID } from './tree.ts';
import type { CompoundNode, CompoundStorage } from './tree.ts';
import { writeCompoundFile } from './write.ts';

const OPTIONS = { what: 'the file', maxBytes: 100 * 1024 * 1024 };
const encode = (text: string): Uint8Array => new TextEncoder().encode(text);
const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex');

function pattern(length: number, seed: number): Uint8Array {
  return Uint8Array.from({ length }, (_, i) => (i * 31 + seed) & 0xff);
}

function storage(name: string, children: CompoundNode[], clsid = NO_CLSID): CompoundStorage {
  return { kind: 'storage', name, clsid, stateBits: 0, children };
}

const stream = (name: string, content: Uint8Array): CompoundNode => ({
  kind: 'stream',
  name,
  content,
});

/** Paths and hex contents of a tree, for comparing trees. */
function flatten(node: CompoundStorage, prefix = ''): Record<string, string> {
  const out: Record<string, string> = {};
  for (const child of node.children) {
    const path = `${prefix}${child.name}`;
    if (child.kind === 'stream') out[path] = hex(child.content);
    else Object.assign(out, { [path]: '' }, flatten(child, `${path}/`));
  }
  return out;
}

function rejectionOf(action: () => unknown): Rejection {
  try {
    action();
  } catch (error) {
    if (error instanceof Rejection) return error;
    throw error;
  }
  throw new Error('expected a rejection');
}

const OBJECT_CLSID = Uint8Array.from({ length: 16 }, (_, i) => i + 1);
const TREE = storage('Root Entry', [
  stream('WordDocument', pattern(300_000, 1)),
  stream('1Table', pattern(5_000, 2)),
  stream('Data', pattern(100, 3)),
  stream('Empty', new Uint8Array(0)),
  storage(
    'ObjectPool',
    Array.from({ length: 9 }, (_, i) =>
      storage(`_${1000 + i}`, [
        stream('\u0001Ole', pattern(20, i)),
        stream('CONTENTS', pattern(4096, i)),
      ]),
    ),
    OBJECT_CLSID,
  ),
]);

describe('writeCompoundFile', () => {
  it('writes a file that python-olefile reads without a defect, holding exactly the tree', () => {
    const bytes = writeCompoundFile(TREE);
    const listing = olefileListing(bytes);
    expect(listing.issues).toEqual([]);
    const read = Object.fromEntries(listing.entries.map((entry) => [entry.path, entry.hex]));
    expect(read).toEqual(flatten(TREE));
    expect(listing.entries.every((entry) => entry.zeroTimes)).toBe(true);
    expect(listing.entries.find((entry) => entry.path === 'ObjectPool')?.clsid).toBe(
      '04030201-0605-0807-090A-0B0C0D0E0F10',
    );
  });

  it('lists FAT sectors through DIFAT sectors once the header holds no more of them', () => {
    // 109 FAT sectors in the header map 109 x 128 sectors of 512 bytes: about 7 MB.
    const tree = storage('Root Entry', [stream('Big', pattern(8_000_000, 5))]);
    const bytes = writeCompoundFile(tree);
    expect(new DataView(bytes.buffer).getUint32(72, true)).toBeGreaterThan(0);
    const listing = olefileListing(bytes);
    expect(listing.issues).toEqual([]);
    expect(listing.entries.map((entry) => [entry.path, entry.hex.length / 2])).toEqual([
      ['Big', 8_000_000],
    ]);
    expect(flatten(parseCompoundFile(bytes, OPTIONS).root)).toEqual(flatten(tree));
  });

  it('is deterministic and idempotent: reading and rewriting its output gives the same bytes', () => {
    const first = writeCompoundFile(TREE);
    expect(hex(writeCompoundFile(TREE))).toBe(hex(first));
    const again = writeCompoundFile(parseCompoundFile(first, OPTIONS).root);
    expect(hex(again)).toBe(hex(first));
  });

  it('refuses a name no compound file can hold', () => {
    expect(() => writeCompoundFile(storage('Root Entry', [stream('a/b', encode('x'))]))).toThrow(
      TypeError,
    );
    expect(() =>
      writeCompoundFile(storage('Root Entry', [stream('x'.repeat(32), encode('x'))])),
    ).toThrow(TypeError);
    expect(() =>
      writeCompoundFile(
        storage('Root Entry', [stream('A', encode('1')), stream('a', encode('2'))]),
      ),
    ).toThrow(TypeError);
  });
});

describe('parseCompoundFile', () => {
  it('reads a file written by another writer (the cfb package)', () => {
    const bytes = buildCompoundFile({
      WordDocument: pattern(10_000, 1),
      '1Table': pattern(3_000, 2),
      'Macros/VBA/dir': pattern(500, 3),
    });
    const tree = flatten(parseCompoundFile(bytes, OPTIONS).root);
    expect(tree.WordDocument).toBe(hex(pattern(10_000, 1)));
    expect(tree['1Table']).toBe(hex(pattern(3_000, 2)));
    expect(tree['Macros/VBA/dir']).toBe(hex(pattern(500, 3)));
  });

  it('copies no free sector, slack, unreachable entry or trailing byte into its output', () => {
    const secret = encode('SECRET-LEFTOVER');
    const bytes = writeCompoundFile(
      storage('Root Entry', [stream('Kept', pattern(5_000, 1)), stream('Gone', pattern(6_000, 9))]),
    );
    const file = new Uint8Array(bytes.length + 1024);
    file.set(bytes);
    const view = new DataView(file.buffer);
    // Slack: the bytes after the end of a stream's last sector's content.
    const directory = (view.getUint32(48, true) + 1) * 512;
    const keptEntry = [1, 2].find((i) => view.getUint16(directory + i * 128, true) === 0x4b)!;
    const kept = directory + keptEntry * 128;
    const keptStart = view.getUint32(kept + 116, true);
    file.set(secret, (keptStart + 1) * 512 + 5_000 + 10);
    // Trailing bytes, and the other stream cut off from the root's tree.
    file.set(secret, bytes.length + 100);
    view.setUint32(directory + 76, keptEntry, true);
    view.setUint32(kept + 68, 0xffffffff, true);
    view.setUint32(kept + 72, 0xffffffff, true);
    const tree = parseCompoundFile(file, OPTIONS).root;
    expect(Object.keys(flatten(tree))).toEqual(['Kept']);
    const output = Buffer.from(writeCompoundFile(tree));
    expect(output.includes(Buffer.from(secret))).toBe(false);
    expect(output.includes(Buffer.from(pattern(6_000, 9)))).toBe(false);
  });

  it.each<[CompoundDamage, string]>([
    ['fat-cycle', 'twice or shares it'],
    ['chain-past-eof', 'past the'],
    ['directory-cycle', 'reached twice'],
    ['size-over-chain', 'but its sector chain holds'],
    ['oversize-difat', 'DIFAT sectors where'],
    ['oversize-fat', 'FAT sectors in a file of'],
    ['truncated', 'past the'],
    ['shared-sector', 'twice or shares it'],
  ])('rejects %s as invalid_file naming the fault', (damage, fault) => {
    const bytes = writeCompoundFile(
      storage('Root Entry', [stream('A', pattern(10_000, 1)), stream('B', pattern(6_000, 2))]),
    );
    const rejection = rejectionOf(() =>
      parseCompoundFile(damageCompoundFile(bytes, damage), OPTIONS),
    );
    expect(rejection.reason).toBe('invalid_file');
    expect(rejection.message).toContain('the file is not a readable compound file');
    expect(rejection.message).toContain(fault);
  });

  it('ignores the high 32 bits of a version 3 stream size ([MS-CFB] 2.6.3)', () => {
    const bytes = writeCompoundFile(storage('Root Entry', [stream('A', pattern(5_000, 1))]));
    const view = new DataView(bytes.buffer);
    const directory = (view.getUint32(48, true) + 1) * 512;
    view.setUint32(directory + 128 + 124, 0xdeadbeef, true);
    expect(flatten(parseCompoundFile(bytes, OPTIONS).root)).toEqual({ A: hex(pattern(5_000, 1)) });
  });

  it('rejects a bad signature, version and byte order', () => {
    const bytes = writeCompoundFile(storage('Root Entry', [stream('A', encode('x'))]));
    const broken = (offset: number, value: number): Uint8Array => {
      const copy = Uint8Array.from(bytes);
      new DataView(copy.buffer).setUint16(offset, value, true);
      return copy;
    };
    expect(rejectionOf(() => parseCompoundFile(broken(0, 0), OPTIONS)).message).toContain(
      'signature',
    );
    expect(rejectionOf(() => parseCompoundFile(broken(26, 5), OPTIONS)).message).toContain(
      'major version 5',
    );
    expect(rejectionOf(() => parseCompoundFile(broken(28, 0xfeff), OPTIONS)).message).toContain(
      'byte order',
    );
    expect(rejectionOf(() => parseCompoundFile(broken(30, 12), OPTIONS)).message).toContain(
      'sector shift',
    );
  });

  it('reads a root entry written without a name, as Excel 5 and some PowerPoint writers do', () => {
    const bytes = writeCompoundFile(storage('Root Entry', [stream('A', encode('x'))]));
    const view = new DataView(bytes.buffer);
    const directory = (view.getUint32(48, true) + 1) * 512;
    bytes.fill(0, directory, directory + 64);
    view.setUint16(directory + 64, 2, true);
    expect(flatten(parseCompoundFile(bytes, OPTIONS).root)).toEqual({ A: hex(encode('x')) });
  });

  it('rejects a bad name length and two siblings of one name', () => {
    const bytes = writeCompoundFile(
      storage('Root Entry', [stream('AB', encode('1')), stream('CD', encode('2'))]),
    );
    const view = new DataView(bytes.buffer);
    const directory = (view.getUint32(48, true) + 1) * 512;
    const long = Uint8Array.from(bytes);
    new DataView(long.buffer).setUint16(directory + 128 + 64, 66, true);
    expect(rejectionOf(() => parseCompoundFile(long, OPTIONS)).message).toContain(
      'name length of 66',
    );
    const twin = Uint8Array.from(bytes);
    const twinView = new DataView(twin.buffer);
    twinView.setUint16(directory + 2 * 128, 0x61, true);
    twinView.setUint16(directory + 2 * 128 + 2, 0x62, true);
    twinView.setUint16(directory + 128, 0x41, true);
    twinView.setUint16(directory + 128 + 2, 0x42, true);
    expect(rejectionOf(() => parseCompoundFile(twin, OPTIONS)).message).toContain(
      'two entries named',
    );
  });

  it('holds the streams to maxBytes and storages to a nesting depth', () => {
    const bytes = writeCompoundFile(storage('Root Entry', [stream('A', pattern(50_000, 1))]));
    const tooLarge = rejectionOf(() => parseCompoundFile(bytes, { ...OPTIONS, maxBytes: 40_000 }));
    expect(tooLarge.reason).toBe('file_too_large');
    let deep: CompoundStorage = storage('S', [stream('A', encode('x'))]);
    for (let i = 0; i < 40; i += 1) deep = storage('S', [deep]);
    const nested = writeCompoundFile(storage('Root Entry', [deep]));
    const tooDeep = rejectionOf(() => parseCompoundFile(nested, OPTIONS));
    expect(tooDeep.reason).toBe('policy_violation');
    expect(tooDeep.message).toContain('nests storages');
  });
});

import { deflateRawSync } from 'node:zlib';

import { buildRawZip } from '@disarm/fixtures';
import { describe, expect, it } from 'vitest';

import { Rejection } from './rejection.ts';
import { openZip, readMember } from './zip-reader.ts';
import type { RawZipEntry } from '@disarm/fixtures';

const MiB = 1024 * 1024;

/** Reads the archive's one member the way every handler does. */
async function readOnly(entry: RawZipEntry, maxBytes = 64 * MiB): Promise<Uint8Array> {
  const listing = await openZip(buildRawZip([entry]), 10);
  try {
    const member = listing.members[0];
    if (!member) throw new Error('no member');
    return await readMember(listing, member, maxBytes, 'the member');
  } finally {
    listing.file.close();
  }
}

async function reasonOf(read: Promise<unknown>): Promise<string> {
  const error = await read.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  if (!(error instanceof Rejection)) throw new Error(`expected a rejection, got ${String(error)}`);
  return `${error.reason}: ${error.message}`;
}

describe('readMember', () => {
  it('inflates deflated and copies stored members, a 20 MiB member in more than one step', async () => {
    const text = 'twenty mebibytes of text, '.repeat((20 * MiB) / 26);
    expect(Buffer.from(await readOnly({ name: 'a.xml', data: text, method: 8 })).toString()).toBe(
      text,
    );
    expect(Buffer.from(await readOnly({ name: 'b.xml', data: 'stored' })).toString()).toBe(
      'stored',
    );
  });

  it('refuses a member that inflates past the size it declares, at that size', async () => {
    const bomb = deflateRawSync(Buffer.alloc(256 * MiB));
    const reason = await reasonOf(
      readOnly(
        { name: 'z.xml', method: 8, rawCompressed: bomb, declaredUncompressedSize: 1000 },
        512 * MiB,
      ),
    );
    expect(reason).toMatch(/^invalid_file: .*inflates past the 1000 bytes its record declares/);
  });

  it('refuses a member that inflates to less than it declares', async () => {
    const reason = await reasonOf(
      readOnly({ name: 'a.xml', data: 'short', method: 8, declaredUncompressedSize: 1000 }),
    );
    expect(reason).toMatch(/^invalid_file: .*holds 5 bytes, its record says 1000/);
  });

  it('refuses a stored member whose sizes disagree', async () => {
    const reason = await reasonOf(
      readOnly({ name: 'a.xml', data: 'stored', declaredUncompressedSize: 3 }),
    );
    expect(reason).toMatch(/^invalid_file: /);
  });

  it('refuses a declared size past the ceiling before inflating anything', async () => {
    const reason = await reasonOf(
      readOnly({ name: 'a.xml', data: 'x'.repeat(2 * MiB), method: 8 }, MiB),
    );
    expect(reason).toMatch(/^file_too_large: /);
  });

  it('refuses data that is not deflate, an unsupported method and an encrypted member', async () => {
    expect(
      await reasonOf(
        readOnly({
          name: 'a.xml',
          method: 8,
          rawCompressed: Buffer.from([0xff, 0xff, 0xff, 0xff]),
          declaredUncompressedSize: 10,
        }),
      ),
    ).toMatch(/^invalid_file: the archive is corrupt/);
    expect(await reasonOf(readOnly({ name: 'a.xml', data: 'bzip2?', method: 12 }))).toMatch(
      /^invalid_file: .*bzip2, which is not supported/,
    );
    // A ZipCrypto member starts with its 12-byte encryption header (APPNOTE 6.1.3).
    const encrypted = readOnly({
      name: 'a.xml',
      data: 'encrypted-header+data.',
      declaredUncompressedSize: 10,
      flags: 1,
    });
    expect(await reasonOf(encrypted)).toMatch(/^password_protected: /);
  });
});

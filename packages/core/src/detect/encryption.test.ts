import { buildCompoundFile } from '@disarm/fixtures';
import { describe, expect, it } from 'vitest';

import { disarm } from '../disarm.ts';

/** [MS-DOC] 2.5.2 FibBase with the given flag word at offset 0x0A. */
function wordDocument(flags: number): Buffer {
  const fib = Buffer.alloc(1024);
  fib.writeUInt16LE(0xa5ec, 0);
  fib.writeUInt16LE(0x00c1, 2);
  fib.writeUInt16LE(flags, 10);
  return buildCompoundFile({ WordDocument: fib, '1Table': Buffer.alloc(512) });
}

/** [MS-XLS] records: type, size, data. */
function biffRecord(type: number, data: Buffer): Buffer {
  const header = Buffer.alloc(4);
  header.writeUInt16LE(type, 0);
  header.writeUInt16LE(data.length, 2);
  return Buffer.concat([header, data]);
}

function workbook(withFilePass: boolean): Buffer {
  const bof = Buffer.alloc(16);
  bof.writeUInt16LE(0x0600, 0);
  bof.writeUInt16LE(0x0005, 2);
  // FILEPASS, RC4 CryptoAPI ([MS-XLS] 2.4.117): wEncryptionType 1, then the encryption header.
  const filePass = Buffer.alloc(54);
  filePass.writeUInt16LE(1, 0);
  const records = [
    biffRecord(0x0809, bof),
    ...(withFilePass ? [biffRecord(0x002f, filePass)] : []),
    biffRecord(0x0042, Buffer.from([0xe4, 0x04])),
    biffRecord(0x000a, Buffer.alloc(0)),
  ];
  return buildCompoundFile({ Workbook: Buffer.concat(records) });
}

/** [MS-PPT] 2.3.2 CurrentUserAtom with the given header token. */
function presentation(headerToken: number, streams: Record<string, Buffer> = {}): Buffer {
  const atom = Buffer.alloc(8 + 20);
  atom.writeUInt16LE(0x0000, 0);
  atom.writeUInt16LE(0x0ff6, 2);
  atom.writeUInt32LE(20, 4);
  atom.writeUInt32LE(20, 8);
  atom.writeUInt32LE(headerToken, 12);
  return buildCompoundFile({
    'PowerPoint Document': Buffer.alloc(1024),
    'Current User': atom,
    ...streams,
  });
}

describe('encrypted Office 97-2003 files', () => {
  it.each([
    ['doc', 'an RC4-encrypted Word document', () => wordDocument(0x0100)],
    ['doc', 'an XOR-obfuscated Word document', () => wordDocument(0x8100)],
    ['xls', 'a workbook with FILEPASS', () => workbook(true)],
    ['ppt', 'a presentation with the encrypted header token', () => presentation(0xf3d1c4df)],
    [
      'ppt',
      'a presentation with an EncryptedSummary stream',
      () => presentation(0xe391c05f, { EncryptedSummary: Buffer.alloc(64) }),
    ],
  ])('reports .%s: %s as password_protected', async (extension, _label, make) => {
    expect(await disarm({ bytes: make(), fileName: `x.${extension}` })).toMatchObject({
      status: 'rejected',
      reason: 'password_protected',
    });
  });

  it('lets an unencrypted .doc through to its rebuild, which reads its FIB', async () => {
    // A FIB with nothing after its first fields: the Word rebuild, not detection, refuses it.
    const outcome = await disarm({ bytes: wordDocument(0x0200), fileName: 'x.doc' });
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'invalid_file' });
    if (outcome.status === 'rejected') expect(outcome.detail).toContain('Word 97-2003');
  });

  it('lets an unencrypted .xls through to its rebuild', async () => {
    const outcome = await disarm({ bytes: workbook(false), fileName: 'x.xls' });
    expect(outcome).toMatchObject({ status: 'cleaned' });
  });

  it('lets an unencrypted .ppt through to its rebuild, which finds no edit in its zeros', async () => {
    expect(await disarm({ bytes: presentation(0xe391c05f), fileName: 'x.ppt' })).toMatchObject({
      status: 'rejected',
      reason: 'invalid_file',
      detail: expect.stringMatching(/UserEditAtom/) as unknown,
    });
  });
});

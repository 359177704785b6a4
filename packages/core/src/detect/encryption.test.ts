import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { buildCompoundFile, buildPlainPdf, encryptPdf } from '@disarm/fixtures';
import type { PdfEncryptionOptions } from '@disarm/fixtures';
import { describe, expect, it } from 'vitest';

import { disarm } from '../disarm.ts';
import { emptyOwnerPasswordAccess, probePdfEncryption } from './pdf-encryption.ts';

describe('encrypted PDFs', () => {
  const plain = buildPlainPdf();

  it.each<[string, PdfEncryptionOptions]>([
    ['RC4 40-bit (R2)', { user: 'secret', owner: 'boss', bits: 40 }],
    ['RC4 128-bit (R3)', { user: 'secret', owner: 'boss', bits: 128 }],
    ['AES-128 (R4)', { user: 'secret', owner: 'boss', bits: 128, aes: true }],
    ['AES-256 (R6)', { user: 'p\u00e4ssw\u00f6rt', owner: 'boss', bits: 256 }],
    [
      'AES-256 (R6) in a cross-reference stream',
      { user: 'secret', owner: 'boss', bits: 256, objectStreams: true },
    ],
  ])('needs the user password of %s: password_protected', async (_label, options) => {
    const bytes = encryptPdf(plain, options);
    expect(probePdfEncryption(bytes).state).toBe('password');
    expect(await disarm({ bytes, fileName: 'locked.pdf' })).toMatchObject({
      status: 'rejected',
      reason: 'password_protected',
    });
  });

  it.each<[string, PdfEncryptionOptions]>([
    ['RC4 40-bit (R2)', { user: '', owner: 'boss', bits: 40 }],
    ['RC4 128-bit (R3)', { user: '', owner: 'boss', bits: 128 }],
    ['AES-128 (R4)', { user: '', owner: 'boss', bits: 128, aes: true }],
    [
      'AES-128 (R4) with cleartext metadata',
      { user: '', owner: 'boss', bits: 128, aes: true, cleartextMetadata: true },
    ],
    ['AES-256 (R6)', { user: '', owner: 'boss', bits: 256, objectStreams: true }],
  ])(
    'opens %s with the empty user password: not password_protected, on to the PDF rebuild',
    async (_label, options) => {
      const bytes = encryptPdf(plain, options);
      expect(probePdfEncryption(bytes)).toEqual({ state: 'open', encrypted: true });
      const outcome = await disarm({ bytes, fileName: 'permissions.pdf' });
      expect(outcome.status).toBe('cleaned');
      if (outcome.status !== 'cleaned') return;
      // The rebuilt copy is written without encryption.
      expect(probePdfEncryption(outcome.bytes)).toEqual({ state: 'open', encrypted: false });
    },
  );

  it('opens AES-256 (R6) with an empty owner password: the file key is the one qpdf finds', async () => {
    const bytes = encryptPdf(plain, { user: 'secret', owner: '', bits: 256 });
    expect(probePdfEncryption(bytes)).toEqual({ state: 'open', encrypted: true });
    const access = emptyOwnerPasswordAccess(bytes);
    const directory = mkdtempSync(join(tmpdir(), 'disarm-key-'));
    const path = join(directory, 'owner-empty.pdf');
    writeFileSync(path, bytes);
    const shown = execFileSync('qpdf', ['--show-encryption-key', '--show-encryption', path]);
    rmSync(directory, { recursive: true });
    const key = /Encryption key = ([0-9a-f]{64})/.exec(shown.toString())?.[1];
    expect(key).toBeDefined();
    expect(access).toEqual({
      kind: 'file-key',
      key: Buffer.from(key ?? '', 'hex'),
      strings: 'AESV3',
      streams: 'AESV3',
    });
    const outcome = await disarm({ bytes, fileName: 'owner-empty.pdf' });
    expect(outcome.status).toBe('cleaned');
    if (outcome.status !== 'cleaned') return;
    expect(probePdfEncryption(outcome.bytes)).toEqual({ state: 'open', encrypted: false });
  });

  it('gives no owner access when the empty password is the user password or opens nothing', () => {
    expect(
      emptyOwnerPasswordAccess(encryptPdf(plain, { user: '', owner: 'boss', bits: 256 })),
    ).toBeUndefined();
    expect(
      emptyOwnerPasswordAccess(encryptPdf(plain, { user: 'secret', owner: 'boss', bits: 256 })),
    ).toBeUndefined();
    expect(emptyOwnerPasswordAccess(plain)).toBeUndefined();
  });

  it('takes /ID from an earlier trailer when an incremental update omits it', () => {
    const bytes = encryptPdf(plain, { user: '', owner: 'boss', bits: 128 });
    const text = bytes.toString('latin1');
    const encrypt = /\/Encrypt\s+(\d+ \d+ R)/.exec(text)?.[1];
    const startxref = /startxref\s+(\d+)/.exec(text)?.[1];
    expect(encrypt).toBeDefined();
    // ISO 32000-1 7.5.6: an appended update whose trailer repeats /Encrypt but not /ID.
    const update = `xref\n0 0\ntrailer\n<< /Size 6 /Prev ${startxref ?? 0} /Encrypt ${encrypt ?? ''} >>\nstartxref\n${bytes.length}\n%%EOF\n`;
    const updated = Buffer.concat([bytes, Buffer.from(update, 'latin1')]);
    expect(probePdfEncryption(updated)).toEqual({ state: 'open', encrypted: true });
  });

  it('refuses a security handler other than /Standard', async () => {
    const bytes = Buffer.from(
      '%PDF-1.7\n1 0 obj\n<< /Type /Catalog >>\nendobj\ntrailer\n<< /Root 1 0 R /Encrypt << /Filter /Adobe.PubSec /SubFilter /adbe.pkcs7.s5 /V 4 /R 4 >> >>\n%%EOF\n',
    );
    const outcome = await disarm({ bytes, fileName: 'certificate.pdf' });
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'password_protected' });
    expect(outcome.status === 'rejected' && outcome.detail).toMatch(/Adobe\.PubSec/);
  });

  it('refuses an encryption dictionary that cannot be read as invalid_file', async () => {
    const bytes = Buffer.from(
      '%PDF-1.7\n1 0 obj\n<< /Type /Catalog >>\nendobj\n6 0 obj\nE< /Filter /Standard >>\nendobj\ntrailer\n<< /Root 1 0 R /Encrypt 6 0 R >>\n%%EOF\n',
    );
    expect(await disarm({ bytes, fileName: 'broken.pdf' })).toMatchObject({
      status: 'rejected',
      reason: 'invalid_file',
    });
  });

  it('ignores /Encrypt outside a trailer (in a content stream)', () => {
    const bytes = Buffer.from(
      '%PDF-1.7\n4 0 obj\n<< /Length 30 >>\nstream\n/Encrypt 5 0 R BT ET\nendstream\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n',
    );
    expect(probePdfEncryption(bytes)).toEqual({ state: 'open', encrypted: false });
  });
});

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

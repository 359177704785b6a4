import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { buildPlainPdf, encryptPdf } from '@disarm/fixtures';
import type { PdfEncryptionOptions } from '@disarm/fixtures';
import { describe, expect, it } from 'vitest';

import { disarm } from '../../disarm.ts';
import { emptyOwnerPasswordAccess, probePdfEncryption } from './encryption.ts';

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

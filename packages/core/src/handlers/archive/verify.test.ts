import { buildRawZip } from '@disarm/fixtures';
import type { RawZipEntry } from '@disarm/fixtures';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { writeZip } from '../../_internal/zip-writer.ts';
import { formatForFileName } from '../../formats.ts';
import { Deadline } from '../../limits.ts';
import type { DetectedFile, EngineContext, HandlerOutput } from '../types.ts';
import { VerifyFailure } from '../types.ts';
import { archiveHandler } from './handler.ts';

const format = formatForFileName('out.zip');
if (!format) throw new Error('zip is not on the allowlist');
const input: DetectedFile = { bytes: Buffer.from('the input'), fileName: 'in.zip', format };
// The archive checks use only the deadline of the engine context.
const context = { deadline: new Deadline(60_000) } as unknown as EngineContext;
const MODIFIED_AT = new Date(Date.UTC(2024, 0, 2));

async function failedCheck(output: HandlerOutput): Promise<string> {
  try {
    await archiveHandler.verify(output, input, context);
  } catch (error) {
    if (error instanceof VerifyFailure) return error.check;
    throw error;
  }
  return 'passed';
}

function raw(entries: RawZipEntry[], options: Parameters<typeof buildRawZip>[1] = {}) {
  return {
    // As our writer does: made on Unix, regular files.
    bytes: buildRawZip(
      entries.map((entry) => ({ unixMode: 0o100644, ...entry })),
      options,
    ),
    findings: [],
    manifest: { entryNames: entries.map((entry) => String(entry.name)) },
  };
}

describe('archive verify before release', () => {
  it('passes what our writer writes, and Info-ZIP lists the same names', async () => {
    const bytes = await writeZip([
      { path: 'docs/', directory: true, modifiedAt: MODIFIED_AT },
      { path: 'docs/a.png', bytes: Buffer.alloc(5000, 7), modifiedAt: MODIFIED_AT, compress: true },
      { path: 'b.jpg', bytes: Buffer.from('jpeg'), modifiedAt: MODIFIED_AT, compress: false },
    ]);
    const entryNames = ['docs/', 'docs/a.png', 'b.jpg'];
    expect(await failedCheck({ bytes, findings: [], manifest: { entryNames } })).toBe('passed');
    const path = join(mkdtempSync(join(tmpdir(), 'disarm-verify-')), 'out.zip');
    writeFileSync(path, bytes);
    const listed = execFileSync('unzip', ['-Z1', path], { encoding: 'utf8' });
    expect(listed.split('\n').filter(Boolean)).toEqual(entryNames);
  });

  it.each([
    ['no manifest', async () => ({ ...(await good()), manifest: undefined }), 'archive.relist'],
    [
      'a name the rebuild did not decide',
      async () => ({ ...(await good()), manifest: { entryNames: ['a.png', 'c.png'] } }),
      'archive.relist',
    ],
    [
      'one entry fewer than decided',
      async () => ({ ...(await good()), manifest: { entryNames: ['a.png', 'b.png', 'c.png'] } }),
      'archive.relist',
    ],
    [
      'an archive comment',
      () => raw([{ name: 'a.png', data: 'x' }], { comment: 'hi' }),
      'archive.no-comment',
    ],
    [
      'an entry comment',
      () => raw([{ name: 'a.png', data: 'x', comment: 'hi' }]),
      'archive.no-comment',
    ],
    [
      'data after the end record',
      () => raw([{ name: 'a.png', data: 'x' }], { suffix: Buffer.from('<html>') }),
      'archive.structure',
    ],
    [
      'an extra field',
      () => raw([{ name: 'a.png', data: 'x', extra: Buffer.from([0x99, 0x99, 2, 0, 1, 2]) }]),
      'archive.no-extra-fields',
    ],
    [
      'an encrypted entry',
      () => raw([{ name: 'a.png', data: 'x', flags: 1 }]),
      'archive.not-encrypted',
    ],
    ['a device name', () => raw([{ name: 'CON.png', data: 'x' }]), 'archive.names'],
    [
      'a symbolic link',
      () => raw([{ name: 'a.png', data: '/etc/passwd', unixMode: 0o120777 }]),
      'archive.modes',
    ],
    [
      'a name written twice',
      () =>
        raw([
          { name: 'a.png', data: 'x' },
          { name: 'A.png', data: 'y' },
        ]),
      'archive.names',
    ],
    [
      'data that does not match its CRC-32',
      () => {
        const output = raw([{ name: 'a.png', data: 'xyz' }]);
        output.bytes[30 + 'a.png'.length] = 0x41;
        return output;
      },
      'archive.data',
    ],
  ])('fails %s', async (_label, make, check) => {
    const output = (await make()) as HandlerOutput;
    expect(await failedCheck(output)).toBe(check);
  });
});

async function good(): Promise<HandlerOutput> {
  const bytes = await writeZip([
    { path: 'a.png', bytes: Buffer.from('a'), modifiedAt: MODIFIED_AT, compress: true },
    { path: 'b.png', bytes: Buffer.from('b'), modifiedAt: MODIFIED_AT, compress: true },
  ]);
  return { bytes, findings: [], manifest: { entryNames: ['a.png', 'b.png'] } };
}

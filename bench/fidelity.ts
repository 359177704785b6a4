/**
 * A cheap fidelity check: our output and the peer's output of the same file must decode to the
 * same pixel dimensions (and frame count); for archives, the same members with the same
 * dimensions. It catches a rebuild that drops frames, turns or crops images, or loses members.
 */
import { readFile } from 'node:fs/promises';
import type { Readable } from 'node:stream';

import sharp from 'sharp';
import yauzl from 'yauzl';
import type { Entry, ZipFile } from 'yauzl';

import { readBmpDimensions } from './bmp.ts';
import type { BenchFormat } from './types.ts';

/**
 * What a file decodes to, as text: `640x480` for a still, `480x270x12` for an animation, and for
 * an archive its file members in name order with theirs (`a.jpg=640x480; b.png=800x600`).
 */
export async function describeOutput(path: string, format: BenchFormat): Promise<string> {
  if (format === 'zip' || format === 'gz') return describeArchive(path);
  const bytes = await readFile(path);
  return describeImage(bytes, format === 'bmp');
}

async function describeImage(bytes: Buffer, isBmp: boolean): Promise<string> {
  if (isBmp) return readBmpDimensions(bytes) ?? 'not a BMP';
  const metadata = await sharp(bytes, { pages: -1 }).metadata();
  const frames = metadata.pages ?? 1;
  const height = metadata.pageHeight ?? metadata.height;
  return frames > 1 ? `${metadata.width}x${height}x${frames}` : `${metadata.width}x${height}`;
}

async function describeArchive(path: string): Promise<string> {
  const zip = await yauzl.openPromise(path, { lazyEntries: true, autoClose: false });
  try {
    const members: string[] = [];
    for (const entry of await listEntries(zip)) {
      // `zip -r` adds folder entries; our rebuild writes only what the input had.
      if (entry.fileName.endsWith('/')) continue;
      const bytes = await collect(await zip.openReadStreamPromise(entry));
      const isBmp = entry.fileName.toLowerCase().endsWith('.bmp');
      members.push(`${entry.fileName}=${await describeImage(bytes, isBmp)}`);
    }
    return members.sort().join('; ');
  } finally {
    zip.close();
  }
}

function listEntries(zip: ZipFile): Promise<Entry[]> {
  return new Promise((resolve, reject) => {
    const entries: Entry[] = [];
    zip.on('entry', (entry: Entry) => {
      entries.push(entry);
      zip.readEntry();
    });
    zip.once('end', () => {
      resolve(entries);
    });
    zip.once('error', reject);
    zip.readEntry();
  });
}

async function collect(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

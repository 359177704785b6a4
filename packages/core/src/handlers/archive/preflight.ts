import { promisify } from 'node:util';
import { gunzip, inflateRaw } from 'node:zlib';

import { memorySource } from '../../_internal/byte-source.ts';
import type { ByteSource } from '../../_internal/byte-source.ts';
import { asBuffer, formatBytes } from '../../_internal/bytes.ts';
import { Rejection } from '../../_internal/rejection.ts';
import { COMPRESSION_DEFLATED, COMPRESSION_STORED } from '../../_internal/zip-reader.ts';
import { walkZip } from '../../_internal/zip-walk.ts';
import { sniff } from '../../detect/sniff.ts';
import { isDisarmError } from '../../errors.ts';
import { formatForFileName } from '../../formats.ts';
import { entryLimitRejection } from '../../limits.ts';
import type { EngineContext, SourcedFile } from '../types.ts';

const gunzipAsync = promisify(gunzip);
const inflateRawAsync = promisify(inflateRaw);
/** APPNOTE 4.4.4 bit 0. */
const FLAG_ENCRYPTED = 0x0001;

interface Level {
  /** The submitted archive (maybe a file read by range), or a nested one inflated in memory. */
  readonly source: ByteSource;
  readonly kind: 'zip' | 'gzip';
  /** 0 for the submitted archive, as `EngineContext.depth`. */
  readonly depth: number;
}

/**
 * The cheap pre-pass over a submitted archive (docs/ARCHITECTURE.md "Limits": checked before the
 * work they bound): lists the central directory of every level of the tree, inflating only nested
 * archives, and refuses from the listings alone when the whole tree holds more than `maxEntries`
 * entries or nests deeper than `maxDepth` (`policy_violation`), or when the sizes its members
 * declare add up past `maxBytes` (`file_too_large`). Nothing is scanned or rebuilt here, so a file
 * the budgets refuse costs milliseconds instead of the time budget.
 *
 * Levels that cannot be listed are left to the rebuild, which reports them precisely.
 */
export async function preflightArchive(input: SourcedFile, context: EngineContext): Promise<void> {
  const { limits } = context;
  const pending: Level[] = [
    { source: input.source, kind: input.format.kind === 'gzip' ? 'gzip' : 'zip', depth: 0 },
  ];
  let entries = 0;
  let declared = 0;
  let inflated = 0;
  const count = (more: number, bytes: number): void => {
    entries += more;
    declared += bytes;
    if (entries > limits.maxEntries) throw entryLimitRejection(limits.maxEntries, entries);
    if (declared > limits.maxBytes) {
      throw new Rejection(
        'file_too_large',
        `the archive and the archives inside it declare ${formatBytes(declared)} of content, past the ${formatBytes(limits.maxBytes)} ceiling`,
      );
    }
  };
  for (let level = pending.pop(); level; level = pending.pop()) {
    context.deadline.check();
    if (level.depth >= limits.maxDepth) {
      throw new Rejection(
        'policy_violation',
        `archives nest more than ${limits.maxDepth} levels deep`,
      );
    }
    const nested =
      level.kind === 'gzip'
        ? await listGzip(level, limits.maxBytes - inflated, context, count)
        : await listZip(level, limits.maxBytes - inflated, context, count);
    for (const child of nested) {
      inflated += child.source.length;
      pending.push(child);
    }
  }
}

type Count = (entries: number, bytes: number) => void;

async function listGzip(
  level: Level,
  maxBytes: number,
  context: EngineContext,
  count: Count,
): Promise<Level[]> {
  let inner: Buffer;
  try {
    inner = await context.deadline.race(
      gunzipAsync(asBuffer(await level.source.readAll()), {
        maxOutputLength: Math.max(1, maxBytes),
      }),
    );
  } catch (error) {
    if (isDisarmError(error)) throw error;
    if (error instanceof Error && 'code' in error && error.code === 'ERR_BUFFER_TOO_LARGE') {
      throw new Rejection('file_too_large', 'the gzip data expands past the content ceiling');
    }
    // Corrupt data: the rebuild reports it precisely.
    return [];
  }
  count(1, inner.length);
  const kind = sniff(inner);
  return kind === 'zip' || kind === 'gzip'
    ? [{ source: memorySource(inner), kind, depth: level.depth + 1 }]
    : [];
}

async function listZip(
  level: Level,
  maxBytes: number,
  context: EngineContext,
  count: Count,
): Promise<Level[]> {
  // The strict walker lists without an event-loop turn per entry; a level it cannot walk is left
  // to the rebuild, which reports it precisely.
  const walk = walkZip(level.source);
  if (!walk.ok) return [];
  const { entries } = walk.zip;
  count(
    entries.length,
    entries.reduce((sum, entry) => sum + entry.uncompressedSize, 0),
  );
  const nested: Level[] = [];
  let left = maxBytes;
  for (const entry of entries) {
    context.deadline.check();
    if (
      (entry.flags & FLAG_ENCRYPTED) !== 0 ||
      formatForFileName(entry.name ?? '')?.family !== 'archive' ||
      (entry.method !== COMPRESSION_STORED && entry.method !== COMPRESSION_DEFLATED)
    ) {
      continue;
    }
    if (entry.uncompressedSize > left) {
      throw new Rejection(
        'file_too_large',
        `member "${entry.name ?? ''}" expands past the content ceiling`,
      );
    }
    const stored = asBuffer(level.source.read(entry.dataStart, entry.compressedSize));
    let bytes: Uint8Array;
    try {
      bytes =
        entry.method === COMPRESSION_STORED
          ? stored
          : await context.deadline.race(
              inflateRawAsync(stored, { maxOutputLength: Math.max(1, entry.uncompressedSize) }),
            );
    } catch (error) {
      if (isDisarmError(error)) throw error;
      continue;
    }
    left -= bytes.length;
    const kind = sniff(bytes);
    if (kind === 'zip' || kind === 'gzip') {
      nested.push({ source: memorySource(bytes), kind, depth: level.depth + 1 });
    }
  }
  return nested;
}

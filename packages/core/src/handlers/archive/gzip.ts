import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';

import { asBuffer, u32le } from '../../_internal/bytes.ts';
import { Rejection } from '../../_internal/rejection.ts';
import { writeZip } from '../../_internal/zip-writer.ts';
import { probeCompoundFile } from '../../detect/cfb-probe.ts';
import { sniff } from '../../detect/sniff.ts';
import type { Sniffed } from '../../detect/sniff.ts';
import { hasSvgRoot } from '../../detect/text-probe.ts';
import { probeZip } from '../../detect/zip-probe.ts';
import { FindingTally } from '../../findings.ts';
import { extensionOf } from '../../formats.ts';
import type { DetectedFile, EngineContext, HandlerOutput } from '../types.ts';
import { pathProblem } from './member-names.ts';
import { ArchiveVerdict, hidesArchive, isCompressedFormat } from './verdict.ts';

const gunzipAsync = promisify(gunzip);

/** RFC 1952 2.3.1 FLG bits. */
const FHCRC = 0x02;
const FEXTRA = 0x04;
const FNAME = 0x08;
const FCOMMENT = 0x10;
const FLG_RESERVED = 0xe0;
/** Longest FNAME/FCOMMENT read; the RFC sets none, real tools write short names. */
const MAX_HEADER_STRING_BYTES = 4096;

/** The parts of a gzip member header (RFC 1952 2.3) the rebuild uses. */
export interface GzipHeader {
  /** FNAME, ISO 8859-1, when present. */
  readonly fileName: string | undefined;
  /**
   * FNAME read as UTF-8, when its bytes are valid UTF-8 and say something else: Unix `gzip`
   * stores the name's raw bytes, which a UTF-8 system shows this way.
   */
  readonly fileNameAsUtf8?: string;
  /** MTIME as a date, when set. */
  readonly modifiedAt: Date | undefined;
  readonly hasComment: boolean;
  readonly hasExtra: boolean;
}

/**
 * Reads a gzip member header.
 * @throws {Rejection} `invalid_file` when it is malformed.
 */
export function parseGzipHeader(bytes: Uint8Array): GzipHeader {
  if (bytes.length < 18 || bytes[0] !== 0x1f || bytes[1] !== 0x8b) {
    throw new Rejection('invalid_file', 'the gzip header is truncated');
  }
  if (bytes[2] !== 8) {
    throw new Rejection('invalid_file', `gzip compression method ${bytes[2] ?? 0} is not deflate`);
  }
  const flags = bytes[3] ?? 0;
  if ((flags & FLG_RESERVED) !== 0) {
    throw new Rejection('invalid_file', 'the gzip header sets reserved flag bits (RFC 1952 2.3.1)');
  }
  const mtime = u32le(bytes, 4);
  let offset = 10;
  if ((flags & FEXTRA) !== 0) {
    const length = (bytes[offset] ?? 0) | ((bytes[offset + 1] ?? 0) << 8);
    offset += 2 + length;
  }
  let fileName: string | undefined;
  let fileNameAsUtf8: string | undefined;
  if ((flags & FNAME) !== 0) {
    const end = zeroTerminated(bytes, offset, 'FNAME');
    const raw = asBuffer(bytes).subarray(offset, end);
    // Buffer's latin1 is ISO 8859-1 proper; TextDecoder's "latin1" is windows-1252.
    fileName = raw.toString('latin1');
    fileNameAsUtf8 = utf8OrUndefined(raw);
    if (fileNameAsUtf8 === fileName) fileNameAsUtf8 = undefined;
    offset = end + 1;
  }
  if ((flags & FCOMMENT) !== 0) offset = zeroTerminated(bytes, offset, 'FCOMMENT') + 1;
  if ((flags & FHCRC) !== 0) offset += 2;
  if (offset > bytes.length) throw new Rejection('invalid_file', 'the gzip header is truncated');
  return {
    fileName,
    ...(fileNameAsUtf8 === undefined ? {} : { fileNameAsUtf8 }),
    modifiedAt: mtime > 0 ? new Date(mtime * 1000) : undefined,
    hasComment: (flags & FCOMMENT) !== 0,
    hasExtra: (flags & FEXTRA) !== 0,
  };
}

function utf8OrUndefined(bytes: Uint8Array): string | undefined {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

function zeroTerminated(bytes: Uint8Array, start: number, field: string): number {
  const end = bytes.indexOf(0, start);
  if (end < 0 || end - start > MAX_HEADER_STRING_BYTES) {
    throw new Rejection('invalid_file', `the gzip ${field} field is not terminated`);
  }
  return end;
}

/**
 * Rebuilds a gzip file: its single inner file is inflated under the content budget, run through
 * the engine, and returned inside a fresh zip (README "What it handles": gz -> zip). The inner
 * name comes from FNAME (its last path segment only) or from the outer name without `.gz`.
 */
export async function rebuildGzip(
  input: DetectedFile,
  context: EngineContext,
): Promise<HandlerOutput> {
  const header = parseGzipHeader(input.bytes);
  const findings = new FindingTally();
  if (header.hasComment) findings.add('archive-comment');
  if (header.hasExtra) findings.add('archive-metadata');

  const inner = await inflate(input.bytes, context);
  context.entries.consume(1);
  const verdict = new ArchiveVerdict();
  let innerName: string;
  try {
    innerName = await nameInnerFile(inner, header, input.fileName, context);
  } catch (error) {
    // The inner file's name or type is refused, but a threat in it still decides the reason.
    if (!(error instanceof Rejection)) throw error;
    verdict.reject(error);
    verdict.addThreats(
      await context.scanMember({ bytes: inner, fileName: 'inner' }, input.bytes),
      'the compressed file',
    );
    verdict.throwIfLost();
    throw error;
  }
  const innerInput = { bytes: inner, fileName: innerName };
  const what = `the compressed file "${innerName}"`;
  const rebuilt = await verdict.capture(context.processMember(innerInput, input.bytes), what);
  if (!rebuilt && hidesArchive(innerInput)) {
    verdict.addThreats(await context.scanMember(innerInput, input.bytes), what);
  }
  verdict.throwIfLost();
  if (!rebuilt) throw new Rejection('invalid_file', 'the compressed file could not be rebuilt');
  findings.at({ member: [innerName] }).addAll(rebuilt.findings);
  const bytes = await writeZip([
    {
      path: rebuilt.fileName,
      bytes: rebuilt.bytes,
      modifiedAt: header.modifiedAt ?? new Date(Date.UTC(1980, 0, 1)),
      compress: !isCompressedFormat(rebuilt.format.outputExtension),
    },
  ]);
  return { bytes, findings: findings.toArray(), manifest: { entryNames: [rebuilt.fileName] } };
}

async function inflate(bytes: Uint8Array, context: EngineContext): Promise<Uint8Array> {
  const limit = context.budget.remaining;
  let inner: Buffer;
  try {
    // zlib stops as soon as the output would pass the limit: a gzip bomb costs at most `limit`.
    inner = await context.deadline.race(gunzipAsync(asBuffer(bytes), { maxOutputLength: limit }));
  } catch (error) {
    if (errorCode(error) === 'ERR_BUFFER_TOO_LARGE') {
      throw new Rejection('file_too_large', 'the gzip data expands past the content ceiling');
    }
    if (errorCode(error)?.startsWith('Z_') === true && error instanceof Error) {
      throw new Rejection('invalid_file', `the gzip data is corrupt: ${error.message}`);
    }
    throw error;
  }
  context.budget.consume(inner.length, 'the gzip data');
  return inner;
}

function errorCode(error: unknown): string | undefined {
  return error instanceof Error && 'code' in error && typeof error.code === 'string'
    ? error.code
    : undefined;
}

async function nameInnerFile(
  inner: Uint8Array,
  header: GzipHeader,
  outerName: string,
  context: EngineContext,
): Promise<string> {
  if (sniff(inner) === 'tar') {
    throw new Rejection(
      'unsupported_file_type',
      'the gzip file holds a tar archive, which is not supported',
    );
  }
  const problem = [header.fileName, header.fileNameAsUtf8]
    .map((name) => (name === undefined ? undefined : pathProblem(name)))
    .find((found) => found !== undefined);
  if (problem !== undefined) {
    throw new Rejection('policy_violation', `the gzip header's file name (FNAME): ${problem}`);
  }
  // A FNAME with a directory part is legal (RFC 1952 2.3.1 asks for none); only its name is kept.
  const fromHeader = header.fileName?.split(/[/\\]/).pop();
  const outerBase = outerName.split('/').pop() ?? outerName;
  const name =
    fromHeader !== undefined && fromHeader.length > 0
      ? fromHeader
      : outerBase.replace(/\.gz$/i, '') || 'file';
  if (extensionOf(name) !== '') return name;
  const inferred = await inferExtension(inner, context);
  if (inferred === undefined) {
    throw new Rejection(
      'unsupported_file_type',
      `the compressed file "${name}" has no extension and its content is not a supported type`,
    );
  }
  return `${name}.${inferred}`;
}

/** Extensions told by the signature alone. */
const EXTENSION_BY_SIGNATURE: Partial<Record<Sniffed, string>> = {
  pdf: 'pdf',
  fdf: 'fdf',
  rtf: 'rtf',
  png: 'png',
  gif: 'gif',
  bmp: 'bmp',
  webp: 'webp',
  jpeg: 'jpg',
  tiff: 'tif',
  gzip: 'gz',
};

/** Extensions of the package kinds a zip probe tells apart. */
const EXTENSION_BY_PACKAGE: Partial<Record<string, string>> = {
  'word-ooxml': 'docx',
  'excel-ooxml': 'xlsx',
  'excel-binary-ooxml': 'xlsb',
  'powerpoint-ooxml': 'pptx',
  'odf-text': 'odt',
  'odf-spreadsheet': 'ods',
  'odf-presentation': 'odp',
};

/** Extensions of the compound-file kinds. */
const EXTENSION_BY_COMPOUND: Partial<Record<string, string>> = {
  'word-binary': 'doc',
  'excel-binary': 'xls',
  'powerpoint-binary': 'ppt',
};

/** For an inner file without an extension: the extension its content is. */
async function inferExtension(
  bytes: Uint8Array,
  context: EngineContext,
): Promise<string | undefined> {
  const sniffed = sniff(bytes);
  const direct = EXTENSION_BY_SIGNATURE[sniffed];
  if (direct !== undefined) return direct;
  if (sniffed === 'cfb')
    return EXTENSION_BY_COMPOUND[probeCompoundFile(bytes, 'the compressed file')];
  if (sniffed === 'text') return hasSvgRoot(bytes) ? 'svg' : undefined;
  if (sniffed !== 'zip') return undefined;
  const content = await probeZip(bytes, context.limits.maxEntries);
  return content.container === 'zip' ? 'zip' : EXTENSION_BY_PACKAGE[content.kind];
}

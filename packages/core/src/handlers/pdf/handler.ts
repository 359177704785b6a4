import { PDFDocument, ParseSpeeds } from '@cantoo/pdf-lib';
import type { PDFContext } from '@cantoo/pdf-lib';

import { memorySink } from '../../_internal/byte-sink.ts';
import type { ByteSink } from '../../_internal/byte-sink.ts';
import { memorySource } from '../../_internal/byte-source.ts';
import { faultOf, Rejection } from '../../_internal/rejection.ts';
import type { ThreatReport } from '../../_internal/rejection.ts';
import { FindingTally } from '../../findings.ts';
import type {
  DetectedFile,
  EngineContext,
  FormatHandler,
  SourcedFile,
  SourcedOutput,
} from '../types.ts';
import { attachmentThreats } from './attachments.ts';
import { parseWithFileKey } from './decrypt.ts';
import { assertNoEncryptedPayload } from './encrypted-payload.ts';
import { emptyOwnerPasswordAccess } from './encryption.ts';
import { disarmDocument, disarmFdf } from './disarm.ts';
import { buildSkeleton, MIN_STREAM_LEFT_IN_SOURCE_BYTES, StreamRanges } from './source.ts';
import { StreamBudget } from './streams.ts';
import { verifyPdf } from './verify.ts';
import { writePdf } from './write.ts';

/** Where a PDF header may start (ISO 32000-1 7.5.2; readers accept junk before it, as detect does). */
const HEADER_WINDOW_BYTES = 1024;
/** Most indirect objects one PDF may declare (a 100 MB file of tiny objects stays under it). */
const MAX_PDF_OBJECTS = 2_000_000;

/**
 * PDF and FDF: parsed (damaged cross-references recovered by scanning, empty-user-password encryption
 * removed), refused when they only wrap an encrypted payload (`encrypted-payload.ts`), disarmed by
 * walking from the catalogue (`disarm.ts`), and written anew (`write.ts`): only reachable objects,
 * no history, every stream re-encoded, a content-derived `/ID`. A PDF is read by range and written
 * as it goes (`source.ts`): the large streams of a submitted PDF on disk (scanned pages, photos)
 * stay in the file until the writer copies or re-encodes them, one at a time.
 */
export const pdfHandler: FormatHandler = {
  family: 'pdf',
  async rebuild(input, context) {
    const output = await rebuildPdf(sourced(input), context, memorySink());
    return {
      bytes: output.content.bytes ?? (await output.content.readAll()),
      findings: output.findings,
    };
  },
  verify: (output, input, context) =>
    verifyPdf({ ...output, content: memorySource(output.bytes) }, sourced(input), context),
  sourced: {
    kinds: new Set(['pdf']),
    rebuild: (input, context, sink) => rebuildPdf(input, context, sink),
    verify: verifyPdf,
  },
};

function sourced(input: DetectedFile): SourcedFile {
  return { source: memorySource(input.bytes), fileName: input.fileName, format: input.format };
}

/**
 * Where the threats of a PDF whose own scan found some are: its attachments, each scanned (see
 * `scanAttachments`). A file that does not parse has no places to name.
 * @throws {Rejection} when the file does not parse or is over a limit.
 */
export async function locateAttachmentThreats(
  input: SourcedFile,
  context: EngineContext,
): Promise<ThreatReport> {
  const parsed = await readPdf(input, context, MIN_STREAM_LEFT_IN_SOURCE_BYTES);
  return attachmentThreats(parsed.pdf, input, context, new StreamBudget(context, parsed.ranges));
}

/** A parsed PDF, with what the writer needs to know of the file it came from. */
interface ParsedPdf {
  readonly pdf: PDFContext;
  /** The streams left in the source while parsing. */
  readonly ranges: StreamRanges;
  readonly header: 'PDF' | 'FDF';
  /** Bytes before the header. */
  readonly start: number;
  /** The header's version, when it has one the writer keeps. */
  readonly version: string | undefined;
}

/**
 * Parses the PDF from its skeleton (see {@link buildSkeleton}), or from the whole file when the
 * parser read the skeleton otherwise than the scan did.
 */
async function readPdf(
  input: SourcedFile,
  context: EngineContext,
  minStreamBytes: number,
): Promise<ParsedPdf> {
  const skeleton = buildSkeleton(input.source, minStreamBytes);
  if (skeleton.ranges.count > 0) {
    try {
      const parsed = await parseBody(skeleton.bytes, skeleton.ranges, input, context);
      if (skeleton.ranges.adopt(parsed.pdf)) return parsed;
    } catch (error) {
      if (!(error instanceof Rejection)) throw error;
    }
  }
  // Nothing left in the source (a small file), or the skeleton could not be held to the file.
  const whole = skeleton.ranges.count > 0 ? await input.source.readAll() : skeleton.bytes;
  return parseBody(whole, new StreamRanges(input.source), input, context);
}

async function parseBody(
  bytes: Uint8Array,
  ranges: StreamRanges,
  input: SourcedFile,
  context: EngineContext,
): Promise<ParsedPdf> {
  const { body, header, start } = pdfBody(bytes, input.format.kind);
  const version = /^%PDF-(1\.[0-7]|2\.0)/.exec(
    Buffer.from(body.subarray(0, 8)).toString('latin1'),
  )?.[1];
  const pdf = await context.deadline.race(loadPdf(body));
  return { pdf, ranges, header, start, version };
}

/** The bytes the parser reads: from the header on, with a header it understands. */
function pdfBody(
  bytes: Uint8Array,
  kind: SourcedFile['format']['kind'],
): { body: Uint8Array; header: 'PDF' | 'FDF'; start: number } {
  const header = kind === 'fdf' ? 'FDF' : 'PDF';
  const start = Buffer.from(
    bytes.buffer,
    bytes.byteOffset,
    Math.min(bytes.length, HEADER_WINDOW_BYTES + 8),
  ).indexOf(`%${header}-`);
  if (start < 0) throw new Rejection('invalid_file', `no ${header} header in the first 1024 bytes`);
  let body = bytes.subarray(start);
  if (header === 'FDF') {
    // FDF shares PDF's syntax (ISO 32000-1 12.7.7); the parser only knows the PDF header.
    body = Buffer.concat([Buffer.from('%PDF-'), body.subarray(5)]);
  }
  if (!/^%PDF-\d\.\d/.test(Buffer.from(body.subarray(0, 8)).toString('latin1'))) {
    // A header without a version ("%PDF-" then anything, as minimal hand-made files have it):
    // the parser needs one; objects are found by scanning, so shifted offsets do not matter.
    body = Buffer.concat([Buffer.from('%PDF-1.4\n'), body.subarray(5)]);
  }
  return { body, header, start };
}

/**
 * Rebuilds a PDF read from `input.source` into `sink`; streams of at least `minStreamBytes` stay
 * in the source while it is parsed (exported for the test that holds the output to a parse of
 * the whole file: it must not depend on what stays).
 */
export async function rebuildPdf(
  input: SourcedFile,
  context: EngineContext,
  sink: ByteSink,
  minStreamBytes = MIN_STREAM_LEFT_IN_SOURCE_BYTES,
): Promise<SourcedOutput> {
  const parsed = await readPdf(input, context, minStreamBytes);
  const { pdf: pdfContext, header } = parsed;
  const findings = new FindingTally();
  findings.add('hidden-data', parsed.start > 0 ? 1 : 0);
  if (pdfContext.largestObjectNumber > MAX_PDF_OBJECTS) {
    throw new Rejection(
      'file_too_large',
      `the PDF declares ${pdfContext.largestObjectNumber} objects; the limit is ${MAX_PDF_OBJECTS}`,
    );
  }
  if (header === 'PDF') assertNoEncryptedPayload(pdfContext);
  const budget = new StreamBudget(context, parsed.ranges);
  // The rebuild leaves embedded files out; the scanners judge them first.
  const threats = await attachmentThreats(pdfContext, input, context, budget);
  if (threats.size > 0) throw threats.toRejection('the file');
  const disarmed =
    header === 'FDF'
      ? disarmFdf(pdfContext, findings, context.deadline)
      : disarmDocument(pdfContext, { findings, deadline: context.deadline, budget });
  context.deadline.check();
  await writePdf({
    context: pdfContext,
    objects: disarmed.objects,
    version: parsed.version ?? (header === 'FDF' ? '1.2' : '1.7'),
    budget,
    header,
    contentStreams: disarmed.contentStreams,
    findings,
    sink,
    deadline: context.deadline,
  });
  if (sink.length > context.limits.maxBytes) {
    throw new Rejection('file_too_large', 'the rebuilt PDF is larger than the size ceiling');
  }
  return { content: await sink.finish(), findings: findings.toArray() };
}

/**
 * The bytes before a damaged file tail: a last `startxref` without its offset (a file cut or
 * botched at the very end). The parser reads objects by scanning, not from that offset, so the
 * file reads without it. Undefined when the tail is not damaged that way.
 */
function withoutDamagedTail(bytes: Uint8Array): Uint8Array | undefined {
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  const at = view.lastIndexOf('startxref');
  if (at < 0) return undefined;
  const tail = view
    .subarray(at + 'startxref'.length, at + 'startxref'.length + 32)
    .toString('latin1');
  return /^\s*\d/.test(tail) ? undefined : bytes.subarray(0, at);
}

async function loadPdf(bytes: Uint8Array): Promise<PDFContext> {
  try {
    return await parsePdf(bytes);
  } catch (error) {
    if (!(error instanceof Rejection) || error.reason !== 'invalid_file') throw error;
    const repaired = withoutDamagedTail(bytes);
    if (repaired === undefined) throw error;
    return parsePdf(repaired);
  }
}

async function parsePdf(bytes: Uint8Array): Promise<PDFContext> {
  try {
    return await parseWithPassword(bytes, '');
  } catch (error) {
    if (!(error instanceof Rejection) || error.reason !== 'password_protected') throw error;
    // pdf-lib tries the empty password only as the user password; as the owner password it
    // opens the file too (ISO 32000-1 7.6.3.4 Algorithm 7, ISO 32000-2 7.6.4.3.3 Algorithm 2.A).
    const access = emptyOwnerPasswordAccess(bytes);
    if (access === undefined) throw error;
    if (access.kind === 'user-password') {
      return parseWithPassword(bytes, Buffer.from(access.password).toString('latin1'));
    }
    try {
      return await parseWithFileKey(bytes, access.key, access);
    } catch (keyError) {
      throw asRejection(keyError);
    }
  }
}

/** pdf-lib's own load, decrypting with a user password (pdf-lib takes its bytes as Latin-1). */
async function parseWithPassword(bytes: Uint8Array, password: string): Promise<PDFContext> {
  let document: PDFDocument;
  try {
    document = await PDFDocument.load(bytes, {
      // The empty user password opens permissions-only files (ISO 32000-1 7.6.3.3).
      password,
      updateMetadata: false,
      throwOnInvalidObject: false,
      parseSpeed: ParseSpeeds.Fastest,
    });
  } catch (error) {
    throw asRejection(error);
  }
  if (document.isEncrypted) {
    throw new Rejection('password_protected', 'the PDF is encrypted and needs a password to open');
  }
  return document.context;
}

/** A parser's error as the rejection it means. */
function asRejection(error: unknown): Rejection {
  if (error instanceof Rejection) return error;
  const message = error instanceof Error ? error.message : String(error);
  if (/password/i.test(message)) {
    return new Rejection('password_protected', 'the PDF needs a password to open');
  }
  if (/encrypt|security handler|crypt/i.test(message)) {
    return new Rejection(
      'password_protected',
      'the PDF is encrypted in a way that needs a key we do not have',
    );
  }
  const fault = faultOf(error, 'its objects or cross-reference data do not hold together');
  return new Rejection('invalid_file', `the PDF does not parse: ${fault.slice(0, 200)}`);
}

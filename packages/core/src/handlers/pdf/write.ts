import { createHash } from 'node:crypto';

import { PDFArray, PDFDict, PDFHexString, PDFRawStream, PDFRef } from '@cantoo/pdf-lib';
import type { PDFContext, PDFObject } from '@cantoo/pdf-lib';

import type { ByteSink } from '../../_internal/byte-sink.ts';
import { Rejection } from '../../_internal/rejection.ts';
import type { FindingTally } from '../../findings.ts';
import type { Deadline } from '../../limits.ts';
import { salvageContent } from './content.ts';
import type { StreamBudget } from './streams.ts';
import { rebuildStream } from './streams.ts';

/** Options of {@link writePdf}. */
export interface WriteOptions {
  readonly context: PDFContext;
  /** The objects to write, catalogue first; they are renumbered 1..n in this order. */
  readonly objects: readonly PDFRef[];
  /** Header version, e.g. `1.7`. */
  readonly version: string;
  /** `PDF`, or `FDF` for form data (ISO 32000-1 12.7.7.1: `%FDF-`). @default 'PDF' */
  readonly header?: 'PDF' | 'FDF';
  readonly budget: StreamBudget;
  /**
   * Page content streams: a stream damaged part-way is cut after its last complete operator
   * ({@link salvageContent}) and counted in `findings` as `damaged-content`.
   */
  readonly contentStreams?: ReadonlySet<PDFRef>;
  /** Where salvaged content streams are counted. */
  readonly findings?: FindingTally;
  /** Where the file is written, object by object. */
  readonly sink: ByteSink;
  /** Checked between objects. */
  readonly deadline?: Deadline;
}

const latin1 = (text: string): Buffer => Buffer.from(text, 'latin1');

/**
 * Writes a new PDF from scratch (never an incremental save): header, the given objects renumbered
 * densely with every reference rewritten, every stream decoded and re-encoded, one classic
 * cross-reference table, a trailer with only `/Size`, `/Root` and an `/ID` derived from the bytes
 * before it (ISO 32000-1 14.4: same content, same ID), and nothing after `%%EOF`.
 *
 * Each object is rebuilt and written into the sink before the next one is looked at, and image
 * data kept as it is is copied from the source in chunks (`budget.ranges`): the writer holds one
 * object at a time, never the document.
 */
export async function writePdf({
  context,
  objects,
  version,
  budget,
  header = 'PDF',
  contentStreams,
  findings,
  sink,
  deadline,
}: WriteOptions): Promise<void> {
  const salvaged = (decoded: Uint8Array): Uint8Array => {
    const salvage = salvageContent(decoded);
    if (salvage === undefined) return decoded;
    findings?.add('damaged-content');
    return salvage.data;
  };
  const numbers = new Map<PDFRef, PDFRef>();
  objects.forEach((ref, index) => numbers.set(ref, PDFRef.of(index + 1, 0)));
  // Old and new numbers share PDFRef instances (PDFRef.of caches), so no container may be
  // renumbered twice.
  const done = new WeakSet<PDFObject>();

  const hash = createHash('sha256');
  let length = 0;
  const put = async (chunk: Uint8Array): Promise<void> => {
    hash.update(chunk);
    length += chunk.length;
    await sink.write(chunk);
  };
  await put(latin1(`%${header}-${version}\n%\u00e2\u00e3\u00cf\u00d3\n`));
  const tail = latin1('\nendobj\n');
  const offsets: number[] = [];
  for (const [index, ref] of objects.entries()) {
    deadline?.check();
    let object = context.lookup(ref);
    if (object === undefined) throw new TypeError('a reachable PDF object vanished');
    if (object instanceof PDFRawStream) {
      const rewrite = contentStreams?.has(ref) === true ? salvaged : undefined;
      object = rebuildStream(object, context, budget, rewrite);
    }
    if (object instanceof PDFHexString) object = canonicalHex(object);
    renumber(object instanceof PDFRawStream ? object.dict : object, numbers, done);
    offsets.push(length);
    await put(latin1(`${index + 1} 0 obj\n`));
    if (object instanceof PDFRawStream) {
      await put(bytesOf(object.dict));
      await put(STREAM_OPEN);
      // Stream data is written in one block, or copied from the source in chunks (pdf-lib's own
      // `copyBytesInto` copies it byte by byte, a quarter of a 50 MB rebuild's time).
      for await (const chunk of budget.ranges?.chunksOf(object.contents) ?? [object.contents]) {
        await put(chunk);
      }
      await put(STREAM_CLOSE);
    } else {
      await put(bytesOf(object));
    }
    await put(tail);
  }
  const xrefOffset = length;
  const rows = offsets.map((offset) => `${String(offset).padStart(10, '0')} 00000 n \n`);
  await put(latin1(`xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${rows.join('')}`));
  const id = hash.digest('hex').slice(0, 32);
  await sink.write(
    latin1(
      `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R /ID [<${id}> <${id}>] >>\nstartxref\n${xrefOffset}\n%%EOF\n`,
    ),
  );
}

const STREAM_OPEN = latin1('\nstream\n');
const STREAM_CLOSE = latin1('\nendstream');

/** An object's bytes as pdf-lib serialises it. */
function bytesOf(object: PDFObject): Buffer {
  const bytes = Buffer.allocUnsafe(object.sizeInBytes());
  if (object.copyBytesInto(bytes, 0) !== bytes.length) {
    throw new TypeError('a PDF object changed size while written');
  }
  return bytes;
}

/**
 * A hex string written as digits only (ISO 32000-1 7.3.4.3: white space is ignored, a missing
 * final digit is 0). The parser keeps the text between `<` and `>` as it found it, so a damaged
 * dictionary opener (`< /Type ...>`) reads as a "hex string" of names: never written back.
 * @throws {Rejection} `invalid_file` for a character that is not a hex digit.
 */
function canonicalHex(value: PDFHexString): PDFHexString {
  const digits = value.asString().replace(/[\0\t\n\f\r ]/g, '');
  if (!/^[0-9a-fA-F]*$/.test(digits)) {
    throw new Rejection(
      'invalid_file',
      'a PDF hex string holds characters that are not hex digits',
    );
  }
  return PDFHexString.of(digits.length % 2 === 0 ? digits : `${digits}0`);
}

/** Rewrites every reference inside one object to its new number (nesting was bounded by disarm). */
function renumber(
  object: PDFObject,
  numbers: ReadonlyMap<PDFRef, PDFRef>,
  done: WeakSet<PDFObject>,
): void {
  if (done.has(object)) return;
  done.add(object);
  if (object instanceof PDFDict) {
    for (const [entryKey, value] of object.entries()) {
      if (value instanceof PDFRef) {
        const next = numbers.get(value);
        if (next) object.set(entryKey, next);
        else object.delete(entryKey);
      } else if (value instanceof PDFHexString) object.set(entryKey, canonicalHex(value));
      else renumber(value, numbers, done);
    }
  } else if (object instanceof PDFArray) {
    for (let index = object.size() - 1; index >= 0; index -= 1) {
      const value = object.get(index);
      if (value instanceof PDFRef) {
        const next = numbers.get(value);
        if (next) object.set(index, next);
        else object.remove(index);
      } else if (value instanceof PDFHexString) object.set(index, canonicalHex(value));
      else renumber(value, numbers, done);
    }
  }
}

import { constants, deflateSync, inflateSync } from 'node:zlib';

import {
  PDFArray,
  PDFDict,
  PDFName,
  PDFNumber,
  PDFRawStream,
  decodePDFRawStream,
} from '@cantoo/pdf-lib';
import type { PDFContext, PDFObject } from '@cantoo/pdf-lib';

import { Rejection } from '../../_internal/rejection.ts';
import { formatBytes } from '../../_internal/bytes.ts';
import { assertExpansionRatio } from '../../limits.ts';
import type { EngineContext } from '../types.ts';
import type { StreamRanges } from './source.ts';

/** Filters whose data we decode and re-encode (ISO 32000-1 7.4, table 6). */
const DECODED_FILTERS: ReadonlySet<string> = new Set([
  'FlateDecode',
  'LZWDecode',
  'ASCIIHexDecode',
  'ASCII85Decode',
  'RunLengthDecode',
]);

/**
 * Image codecs kept as they are, and only as the last filter of an image XObject: their data is
 * pixels for a decoder, never interpreted as PDF syntax.
 */
const IMAGE_FILTERS: ReadonlySet<string> = new Set([
  'DCTDecode',
  'JPXDecode',
  'JBIG2Decode',
  'CCITTFaxDecode',
]);

/** Predictor parameters carried over when a Flate/LZW layer used a predictor (7.4.4.4). */
const PREDICTOR_KEYS = ['Predictor', 'Colors', 'BitsPerComponent', 'Columns'] as const;

/** Stream dictionary keys of the filter machinery and external data, never carried over. */
const FILTER_KEYS: readonly string[] = [
  'Filter',
  'DecodeParms',
  'Length',
  'DL',
  'F',
  'FFilter',
  'FDecodeParms',
];

/** Level of the Flate re-encoding: zlib's default balance of size and speed. */
const DEFLATE_LEVEL = 6;

/**
 * Counts decoded bytes of one document against the engine's size and expansion limits, and reads
 * the data of streams the parse left in the source (see `source.ts`), one stream at a time.
 */
export class StreamBudget {
  readonly #context: EngineContext;
  /** The streams left in the source; their data is a stand-in until read through here. */
  readonly ranges: StreamRanges | undefined;

  constructor(context: EngineContext, ranges?: StreamRanges) {
    this.#context = context;
    this.ranges = ranges;
  }

  /** A stream's data: read from the source when the parse left it there. */
  contentsOf(stream: PDFRawStream): Uint8Array {
    return this.resolve(stream.contents);
  }

  /** `data` itself, or the data it stands in for, read from the source. */
  resolve(data: Uint8Array): Uint8Array {
    return this.ranges?.contentsOf(data) ?? data;
  }

  /** Bytes of data `data` holds, or stands in for. */
  lengthOf(data: Uint8Array): number {
    return this.ranges?.lengthOf(data) ?? data.length;
  }

  /** Largest output one stream layer may decode to. */
  get maxLayerBytes(): number {
    return Math.min(this.#context.limits.maxBytes, this.#context.budget.remaining) + 1;
  }

  /** The rejection for a layer that decodes past {@link maxLayerBytes}. */
  tooLarge(): Rejection {
    return new Rejection(
      'file_too_large',
      `the PDF streams decode past the ${formatBytes(this.#context.limits.maxBytes)} ceiling`,
    );
  }

  /** Counts a decoded stream; rejects a flate bomb with `file_too_large`. */
  consume(encodedBytes: number, decodedBytes: number): void {
    assertExpansionRatio(
      { uncompressedSize: decodedBytes, compressedSize: encodedBytes },
      this.#context.limits.maxExpansionRatio,
      'a PDF stream',
    );
    this.#context.budget.consume(decodedBytes, 'the PDF streams');
  }
}

const nameOf = (value: PDFObject | undefined): string | undefined =>
  value instanceof PDFName ? value.decodeText() : undefined;

/** A stream's data with every filter it may lose undone (see {@link decodeFilters}). */
interface DecodedStream {
  readonly data: Uint8Array;
  /** The image codec kept as the last filter, with its parameters. */
  readonly imageFilter: string | undefined;
  readonly imageParms: PDFObject | undefined;
  /** The predictor of the last Flate/LZW layer, still applied to `data`. */
  readonly predictor: PDFDict | undefined;
}

/**
 * The data of a stream the rebuild leaves out (an embedded file), for the scanners: decoded
 * where its filters decode, else as stored, since the scanners judge it either way.
 * @throws {Rejection} `file_too_large` past the size or expansion limits.
 */
export function decodedForScan(
  stream: PDFRawStream,
  context: PDFContext,
  budget: StreamBudget,
): Uint8Array {
  try {
    return budget.resolve(decodeFilters(stream, context, budget).data);
  } catch (error) {
    if (error instanceof Rejection && error.reason === 'invalid_file') {
      return budget.contentsOf(stream);
    }
    throw error;
  }
}

/**
 * Undoes a stream's filters (decryption first), counting every decoded layer against `budget`;
 * image codec data is left encoded, a Flate/LZW predictor left applied.
 * @throws {Rejection} as {@link rebuildStream}.
 */
function decodeFilters(
  stream: PDFRawStream,
  context: PDFContext,
  budget: StreamBudget,
): DecodedStream {
  const dict = stream.dict;
  const filterValue = dict.lookup(PDFName.of('Filter'));
  const parmsValue = dict.lookup(PDFName.of('DecodeParms'));
  const filters = filterValue === undefined ? [] : listOf(filterValue, context);
  const parms = parmsValue === undefined ? [] : listOf(parmsValue, context);
  const names = filters.map((filter) => {
    const name = nameOf(filter);
    if (name === undefined)
      throw new Rejection('invalid_file', 'a PDF stream filter is not a name');
    return name;
  });

  // A stream left in the source (see `source.ts`) is a stand-in here: image codec data stays one,
  // for the writer to copy from the source; data to decode is read from the source first.
  let data: Uint8Array = stream.transform ? decrypt(stream, context, budget) : stream.contents;
  let predictor: PDFDict | undefined;
  for (const [index, name] of names.entries()) {
    const layerParms = parms[index];
    if (IMAGE_FILTERS.has(name)) {
      if (index !== names.length - 1 || nameOf(dict.lookup(PDFName.of('Subtype'))) !== 'Image') {
        throw new Rejection(
          'invalid_file',
          `a PDF stream uses the image filter ${name} outside an image XObject or not last`,
        );
      }
      const imageParms = layerParms instanceof PDFDict ? layerParms : undefined;
      return { data, imageFilter: name, imageParms, predictor };
    }
    if (!DECODED_FILTERS.has(name)) {
      throw new Rejection('invalid_file', `a PDF stream uses the unsupported filter ${name}`);
    }
    if (predictor) {
      throw new Rejection('invalid_file', 'a PDF stream applies a filter after a predictor');
    }
    data = budget.resolve(data);
    const before = data.length;
    data = decodeLayer({ name, data, parms: layerParms, budget, context });
    budget.consume(before, data.length);
    predictor = predictorOf(layerParms, context);
  }
  return { data: budget.resolve(data), imageFilter: undefined, imageParms: undefined, predictor };
}

/**
 * A content stream's data decoded, as a stream without filters that the writer only compresses
 * (the decoded bytes are counted once, here); undefined when its data stays encoded (image codec
 * data) or predicted, so it cannot be read as content.
 * @throws {Rejection} as {@link rebuildStream}.
 */
export function decodeContentStream(
  stream: PDFRawStream,
  context: PDFContext,
  budget: StreamBudget,
): PDFRawStream | undefined {
  const decoded = decodeFilters(stream, context, budget);
  if (decoded.imageFilter !== undefined || decoded.predictor !== undefined) return undefined;
  const plain = PDFDict.withContext(context);
  for (const [key, value] of stream.dict.entries()) {
    if (!FILTER_KEYS.includes(key.decodeText())) plain.set(key, value);
  }
  return PDFRawStream.of(plain, decoded.data);
}

/**
 * Decodes a stream's filters and writes a new stream: decoded data re-encoded with Flate (keeping
 * a Flate/LZW predictor's parameters), image codec data kept only inside image XObjects. Only the
 * stream dictionary's own keys other than the filter machinery are kept (`/DL`, `/F*` external
 * file keys are dropped). `rewrite` sees the decoded data and returns what is written (not called
 * for image codec data or data still predicted).
 * @throws {Rejection} `invalid_file` when a filter is unknown, misplaced or its data does not
 *   decode (README "PDF": a stream we cannot decode makes the file invalid, never passes through);
 *   `file_too_large` past the size or expansion limits.
 */
export function rebuildStream(
  stream: PDFRawStream,
  context: PDFContext,
  budget: StreamBudget,
  rewrite?: (decoded: Uint8Array) => Uint8Array,
): PDFRawStream {
  const dict = stream.dict;
  const decoded = decodeFilters(stream, context, budget);
  const { imageFilter, imageParms, predictor } = decoded;
  let data = decoded.data;
  if (imageFilter === undefined && predictor === undefined && rewrite !== undefined) {
    data = rewrite(data);
  }
  const next = PDFDict.withContext(context);
  for (const [key, value] of dict.entries()) {
    const name = key.decodeText();
    if (FILTER_KEYS.includes(name)) continue;
    next.set(key, value);
  }
  const encoded: Uint8Array =
    imageFilter !== undefined ? data : deflateSync(data, { level: DEFLATE_LEVEL });
  if (imageFilter !== undefined) {
    next.set(PDFName.of('Filter'), PDFName.of(imageFilter));
    if (imageParms) next.set(PDFName.of('DecodeParms'), imageParms);
  } else {
    next.set(PDFName.of('Filter'), PDFName.of('FlateDecode'));
    if (predictor) next.set(PDFName.of('DecodeParms'), predictor);
  }
  next.set(PDFName.of('Length'), PDFNumber.of(budget.lengthOf(encoded)));
  return PDFRawStream.of(next, encoded);
}

function listOf(value: PDFObject, context: PDFContext): (PDFObject | undefined)[] {
  const resolved = context.lookup(value);
  if (resolved instanceof PDFArray) {
    return resolved.asArray().map((item) => context.lookup(item));
  }
  return [resolved];
}

function decrypt(stream: PDFRawStream, context: PDFContext, budget: StreamBudget): Uint8Array {
  const plain = PDFDict.withContext(context);
  return decodePDFRawStream(
    PDFRawStream.of(plain, budget.contentsOf(stream), stream.transform),
  ).decode();
}

interface Layer {
  readonly name: string;
  readonly data: Uint8Array;
  readonly parms: PDFObject | undefined;
  readonly budget: StreamBudget;
  readonly context: PDFContext;
}

function decodeLayer({ name, data, parms, budget, context }: Layer): Uint8Array {
  const maxBytes = budget.maxLayerBytes;
  if (name === 'FlateDecode') {
    try {
      // Z_SYNC_FLUSH: a stream cut short (damaged files, truncated downloads) yields what it holds.
      return inflateSync(data, { maxOutputLength: maxBytes, finishFlush: constants.Z_SYNC_FLUSH });
    } catch (error) {
      if (isTooLarge(error)) throw budget.tooLarge();
      // A bad zlib header or checksum: fall back to the tolerant decoder below, still bounded.
    }
  }
  try {
    const dict = PDFDict.withContext(context);
    dict.set(PDFName.of('Filter'), PDFName.of(name));
    if (parms instanceof PDFDict) dict.set(PDFName.of('DecodeParms'), parms);
    const decoded = decodePDFRawStream(PDFRawStream.of(dict, data)).getBytes(maxBytes);
    if (decoded.length >= maxBytes) throw budget.tooLarge();
    return Uint8Array.from(decoded);
  } catch (error) {
    if (error instanceof Rejection) throw error;
    if (isTooLarge(error)) throw budget.tooLarge();
    throw new Rejection('invalid_file', `a PDF stream's ${name} data does not decode`);
  }
}

function isTooLarge(error: unknown): boolean {
  return (
    error instanceof RangeError ||
    (error instanceof Error && (error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE')
  );
}

function predictorOf(parms: PDFObject | undefined, context: PDFContext): PDFDict | undefined {
  if (!(parms instanceof PDFDict)) return undefined;
  const predictor = parms.lookup(PDFName.of('Predictor'));
  if (!(predictor instanceof PDFNumber) || predictor.asNumber() <= 1) return undefined;
  const kept = PDFDict.withContext(context);
  for (const key of PREDICTOR_KEYS) {
    const value = parms.lookup(PDFName.of(key));
    if (value instanceof PDFNumber) kept.set(PDFName.of(key), value);
  }
  return kept;
}

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
import { EXPANSION_RATIO_FLOOR_BYTES, formatBytes } from '../../limits.ts';
import type { EngineContext } from '../types.ts';

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

/** Level of the Flate re-encoding: zlib's default balance of size and speed. */
const DEFLATE_LEVEL = 6;

/** Counts decoded bytes of one document against the engine's size and expansion limits. */
export class StreamBudget {
  readonly #context: EngineContext;

  constructor(context: EngineContext) {
    this.#context = context;
  }

  /** Largest output one stream layer may decode to. */
  get maxLayerBytes(): number {
    return Math.min(this.#context.limits.maxBytes, this.#context.budget.remaining) + 1;
  }

  /** Counts a decoded stream; rejects a flate bomb with `file_too_large`. */
  consume(encodedBytes: number, decodedBytes: number): void {
    const ratio = decodedBytes / Math.max(1, encodedBytes);
    if (
      decodedBytes > EXPANSION_RATIO_FLOOR_BYTES &&
      ratio > this.#context.limits.maxExpansionRatio
    ) {
      throw new Rejection(
        'file_too_large',
        `a PDF stream expands ${Math.round(ratio)}-fold (${formatBytes(decodedBytes)}), past the ${this.#context.limits.maxExpansionRatio}-fold limit`,
      );
    }
    this.#context.budget.consume(decodedBytes, 'the PDF streams');
  }
}

const nameOf = (value: PDFObject | undefined): string | undefined =>
  value instanceof PDFName ? value.decodeText() : undefined;

/** A stream's data with its filters undone, up to an image codec kept as it is. */
interface DecodedStream {
  readonly data: Uint8Array;
  /** The image codec the data is still encoded with, when the last filter is one. */
  readonly imageFilter: string | undefined;
  readonly imageParms: PDFDict | undefined;
  /** The predictor parameters of the last Flate/LZW layer, when it used one. */
  readonly predictor: PDFDict | undefined;
}

/**
 * Undoes a stream's filters (decrypting first), counting every decoded layer against the budget.
 * @throws {Rejection} `invalid_file` when a filter is unknown, misplaced or its data does not
 *   decode; `file_too_large` past the size or expansion limits.
 */
function decodeStream(
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

  let data: Uint8Array = stream.transform ? decrypt(stream, context) : stream.contents;
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
      return {
        data,
        imageFilter: name,
        imageParms: layerParms instanceof PDFDict ? layerParms : undefined,
        predictor,
      };
    }
    if (!DECODED_FILTERS.has(name)) {
      throw new Rejection('invalid_file', `a PDF stream uses the unsupported filter ${name}`);
    }
    if (predictor) {
      throw new Rejection('invalid_file', 'a PDF stream applies a filter after a predictor');
    }
    const before = data.length;
    data = decodeLayer({ name, data, parms: layerParms, maxBytes: budget.maxLayerBytes, context });
    budget.consume(before, data.length);
    predictor = predictorOf(layerParms, context);
  }
  return { data, imageFilter: undefined, imageParms: undefined, predictor };
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
    return decodeStream(stream, context, budget).data;
  } catch (error) {
    if (error instanceof Rejection && error.reason === 'invalid_file') return stream.contents;
    throw error;
  }
}

/**
 * Decodes a stream's filters and writes a new stream: decoded data re-encoded with Flate (keeping
 * a Flate/LZW predictor's parameters), image codec data kept only inside image XObjects. Only the
 * stream dictionary's own keys other than the filter machinery are kept (`/DL`, `/F*` external
 * file keys are dropped). `inspect` sees the decoded data (not called for image codec data).
 * @throws {Rejection} `invalid_file` when a filter is unknown, misplaced or its data does not
 *   decode (README "PDF": a stream we cannot decode makes the file invalid, never passes through);
 *   `file_too_large` past the size or expansion limits.
 */
export function rebuildStream(
  stream: PDFRawStream,
  context: PDFContext,
  budget: StreamBudget,
  inspect?: (decoded: Uint8Array) => void,
): PDFRawStream {
  const { data, imageFilter, imageParms, predictor } = decodeStream(stream, context, budget);
  if (imageFilter === undefined) inspect?.(data);
  const next = PDFDict.withContext(context);
  for (const [key, value] of stream.dict.entries()) {
    const name = key.decodeText();
    if (['Filter', 'DecodeParms', 'Length', 'DL', 'F', 'FFilter', 'FDecodeParms'].includes(name)) {
      continue;
    }
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
  next.set(PDFName.of('Length'), PDFNumber.of(encoded.length));
  return PDFRawStream.of(next, encoded);
}

function listOf(value: PDFObject, context: PDFContext): (PDFObject | undefined)[] {
  const resolved = context.lookup(value);
  if (resolved instanceof PDFArray) {
    return resolved.asArray().map((item) => context.lookup(item));
  }
  return [resolved];
}

function decrypt(stream: PDFRawStream, context: PDFContext): Uint8Array {
  const plain = PDFDict.withContext(context);
  return decodePDFRawStream(PDFRawStream.of(plain, stream.contents, stream.transform)).decode();
}

interface Layer {
  readonly name: string;
  readonly data: Uint8Array;
  readonly parms: PDFObject | undefined;
  readonly maxBytes: number;
  readonly context: PDFContext;
}

function decodeLayer({ name, data, parms, maxBytes, context }: Layer): Uint8Array {
  if (name === 'FlateDecode') {
    try {
      // Z_SYNC_FLUSH: a stream cut short (damaged files, truncated downloads) yields what it holds.
      return inflateSync(data, { maxOutputLength: maxBytes, finishFlush: constants.Z_SYNC_FLUSH });
    } catch (error) {
      if (isTooLarge(error)) throw tooLarge(maxBytes);
      // A bad zlib header or checksum: fall back to the tolerant decoder below, still bounded.
    }
  }
  try {
    const dict = PDFDict.withContext(context);
    dict.set(PDFName.of('Filter'), PDFName.of(name));
    if (parms instanceof PDFDict) dict.set(PDFName.of('DecodeParms'), parms);
    const decoded = decodePDFRawStream(PDFRawStream.of(dict, data)).getBytes(maxBytes);
    if (decoded.length >= maxBytes) throw tooLarge(maxBytes);
    return Uint8Array.from(decoded);
  } catch (error) {
    if (error instanceof Rejection) throw error;
    if (isTooLarge(error)) throw tooLarge(maxBytes);
    throw new Rejection('invalid_file', `a PDF stream's ${name} data does not decode`);
  }
}

function isTooLarge(error: unknown): boolean {
  return (
    error instanceof RangeError ||
    (error instanceof Error && (error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE')
  );
}

function tooLarge(maxBytes: number): Rejection {
  return new Rejection('file_too_large', `a PDF stream decodes past ${formatBytes(maxBytes - 1)}`);
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

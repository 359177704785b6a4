import { promisify } from 'node:util';
import { deflate } from 'node:zlib';

import {
  concatTransformationMatrix,
  drawObject,
  popGraphicsState,
  PDFName,
  PDFNumber,
  PDFRawStream,
  pushGraphicsState,
} from '@cantoo/pdf-lib';
import type { PDFDocument, PDFPage } from '@cantoo/pdf-lib';
import sharp from 'sharp';
import type { Sharp } from 'sharp';

/**
 * Largest picture the built-in renderer places, in pixels: an A4 page at 300 dpi is 8.7 million.
 * A larger one is left out of the drawing (its place stays empty) rather than decoded.
 */
const MAX_PICTURE_PIXELS = 40_000_000;
/** Most pictures one drawing places; the rest are left out. */
export const MAX_PICTURES = 500;

/** Raster formats a picture may be in; anything else (an SVG, a metafile) is left out. */
const PICTURE_FORMATS = new Set(['png', 'jpeg', 'gif', 'webp']);
const deflateAsync = promisify(deflate);

/**
 * A picture re-encoded by us, ready to place: JPEG data as it is (a DCT stream), anything else
 * as 8-bit RGB samples on white, deflated.
 */
export interface Picture {
  readonly filter: 'DCTDecode' | 'FlateDecode';
  readonly data: Uint8Array;
  /** Pixels. */
  readonly width: number;
  readonly height: number;
}

/**
 * The pixels `image` draws, flattened on white, as a {@link Picture}: sharp decodes and zlib
 * compresses on the thread pool (pdf-lib's own PNG embedding decodes and deflates in JavaScript,
 * about 0.8 s for an A4 page at 200 dpi against 0.05 s this way).
 */
export async function toPicture(image: Sharp): Promise<Picture> {
  const { data, info } = await image
    .flatten({ background: '#ffffff' })
    .toColourspace('srgb')
    .raw()
    .toBuffer({ resolveWithObject: true });
  return {
    filter: 'FlateDecode',
    data: await deflateAsync(data),
    width: info.width,
    height: info.height,
  };
}

/**
 * A picture in a package or a `data:` URL, decoded and re-encoded by sharp (first frame only, no
 * metadata), or `undefined` when it is not a raster format we place, is larger than
 * {@link MAX_PICTURE_PIXELS}, or does not decode. Never throws for the picture's content.
 */
export async function decodePicture(bytes: Uint8Array): Promise<Picture | undefined> {
  try {
    const input = sharp(bytes, { limitInputPixels: MAX_PICTURE_PIXELS, failOn: 'error' });
    const { format, width, height } = await input.metadata();
    if (!PICTURE_FORMATS.has(format) || width * height > MAX_PICTURE_PIXELS) return undefined;
    const oriented = input.rotate();
    if (format !== 'jpeg') return await toPicture(oriented);
    const encoded = await oriented
      .toColourspace('srgb')
      .jpeg({ quality: 90 })
      .toBuffer({ resolveWithObject: true });
    return {
      filter: 'DCTDecode',
      data: encoded.data,
      width: encoded.info.width,
      height: encoded.info.height,
    };
  } catch {
    return undefined;
  }
}

/** Where a picture goes on a page, in points from the bottom left corner. */
export interface Placement {
  readonly x: number;
  readonly y: number;
  readonly width: number;
  readonly height: number;
}

/** Draws `picture` on `page` as an image XObject (ISO 32000-1 8.9.5) filling `placement`. */
export function drawPicture(
  document: PDFDocument,
  page: PDFPage,
  picture: Picture,
  placement: Placement,
): void {
  const dictionary = document.context.obj({
    Type: 'XObject',
    Subtype: 'Image',
    Width: PDFNumber.of(picture.width),
    Height: PDFNumber.of(picture.height),
    ColorSpace: 'DeviceRGB',
    BitsPerComponent: 8,
    Filter: PDFName.of(picture.filter),
  });
  const reference = document.context.register(PDFRawStream.of(dictionary, picture.data));
  const name = page.node.newXObject('Image', reference);
  page.pushOperators(
    pushGraphicsState(),
    concatTransformationMatrix(placement.width, 0, 0, placement.height, placement.x, placement.y),
    drawObject(name),
    popGraphicsState(),
  );
}

/**
 * The bytes of a `data:` URL of a raster image (`data:image/png;base64,…`), or `undefined` for
 * any other URL: the built-in renderer never fetches anything.
 */
export function dataUrlBytes(url: string): Uint8Array | undefined {
  const match = /^\s*data:image\/(?:png|jpeg|jpg|gif|webp)\s*(;[^,]*)?,/i.exec(url);
  if (match === null) return undefined;
  const payload = url.slice(match[0].length);
  if ((match[1] ?? '').toLowerCase().includes(';base64')) {
    return Buffer.from(payload.replace(/\s+/g, ''), 'base64');
  }
  try {
    return Buffer.from(decodeURIComponent(payload), 'latin1');
  } catch {
    return undefined;
  }
}

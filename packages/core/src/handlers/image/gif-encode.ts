// References: GIF89a specification (W3C, 1990), sections cited as "GIF89a n"; the NETSCAPE2.0
// application extension for the loop count.

/** Decoded frames of an animation, all the size of the logical screen. */
export interface GifFrames {
  readonly width: number;
  /** Height of one frame. */
  readonly height: number;
  /** `frames * width * height * 4` samples: straight RGBA, rows top-down, frame after frame. */
  readonly rgba: Uint8Array;
  readonly frames: number;
  /** Per-frame delay in milliseconds (missing entries: 0). */
  readonly delaysMs: readonly number[];
  /**
   * How many times the animation plays, as libvips reports it (0 = forever, 1 = once, n = n
   * times); `undefined` for a still image.
   */
  readonly loop: number | undefined;
}

const MAX_COLOURS = 256;
const MAX_LZW_CODE = 4095;
const TRANSPARENT = -1;

/**
 * Encodes frames that each use at most 256 colours (fully transparent pixels counted as one) into
 * a GIF89a whose frames decode to exactly the same pixels: every frame is a full-screen image with
 * its own exact colour table, disposed to background before the next (GIF89a 23.c.iv, method 2).
 *
 * @returns the file, or `undefined` when a frame needs more than 256 colours or has partial
 *   transparency (the caller quantises instead).
 */
export function encodeExactGif(input: GifFrames): Uint8Array | undefined {
  const { width, height, frames } = input;
  const pixelsPerFrame = width * height;
  const indexed: { palette: number[]; indices: Uint8Array; transparentIndex: number }[] = [];
  for (let frame = 0; frame < frames; frame += 1) {
    const colours = new Map<number, number>();
    const palette: number[] = [];
    const indices = new Uint8Array(pixelsPerFrame);
    let transparentIndex = TRANSPARENT;
    for (let i = 0; i < pixelsPerFrame; i += 1) {
      const at = (frame * pixelsPerFrame + i) * 4;
      const alpha = input.rgba[at + 3] ?? 0;
      if (alpha !== 0 && alpha !== 255) return undefined;
      const key =
        alpha === 0
          ? TRANSPARENT
          : ((input.rgba[at] ?? 0) << 16) |
            ((input.rgba[at + 1] ?? 0) << 8) |
            (input.rgba[at + 2] ?? 0);
      let index = colours.get(key);
      if (index === undefined) {
        if (palette.length === MAX_COLOURS) return undefined;
        index = palette.length;
        colours.set(key, index);
        palette.push(key === TRANSPARENT ? 0 : key);
        if (key === TRANSPARENT) transparentIndex = index;
      }
      indices[i] = index;
    }
    indexed.push({ palette, indices, transparentIndex });
  }

  const out = new ByteWriter();
  out.ascii('GIF89a');
  // GIF89a 18: logical screen descriptor without a global colour table.
  out.u16(width);
  out.u16(height);
  out.bytes([0x70, 0, 0]);
  // The NETSCAPE2.0 extension counts repeats after the first play (0 = forever); playing once
  // is the absence of the extension.
  if (input.loop !== undefined && input.loop !== 1 && frames > 1) {
    out.bytes([0x21, 0xff, 11]);
    out.ascii('NETSCAPE2.0');
    out.bytes([3, 1]);
    out.u16(Math.min(0xffff, input.loop === 0 ? 0 : input.loop - 1));
    out.bytes([0]);
  }
  indexed.forEach((frame, n) => {
    const transparent = frame.transparentIndex !== TRANSPARENT;
    // GIF89a 23: graphic control extension: disposal 2, transparency flag, delay in 1/100 s.
    const delay = Math.min(0xffff, Math.round((input.delaysMs[n] ?? 0) / 10));
    out.bytes([0x21, 0xf9, 4, (2 << 2) | (transparent ? 1 : 0)]);
    out.u16(delay);
    out.bytes([transparent ? frame.transparentIndex : 0, 0]);
    // GIF89a 20: image descriptor with a local colour table of 2^(n+1) entries.
    const bits = Math.max(1, Math.ceil(Math.log2(Math.max(2, frame.palette.length))));
    out.bytes([0x2c]);
    out.u16(0);
    out.u16(0);
    out.u16(width);
    out.u16(height);
    out.bytes([0x80 | (bits - 1)]);
    for (let i = 0; i < 1 << bits; i += 1) {
      const colour = frame.palette[i] ?? 0;
      out.bytes([(colour >> 16) & 0xff, (colour >> 8) & 0xff, colour & 0xff]);
    }
    const minimumCodeSize = Math.max(2, bits);
    out.bytes([minimumCodeSize]);
    writeSubBlocks(out, lzwEncode(frame.indices, minimumCodeSize));
  });
  out.bytes([0x3b]);
  return out.toBytes();
}

/** GIF89a appendix F: variable-length-code LZW, LSB first, with clear and end codes. */
function lzwEncode(indices: Uint8Array, minimumCodeSize: number): Uint8Array {
  const clear = 1 << minimumCodeSize;
  const end = clear + 1;
  const out = new ByteWriter();
  let bitBuffer = 0;
  let bitCount = 0;
  let codeSize = minimumCodeSize + 1;
  let next = end + 1;
  let table = new Map<number, number>();
  const emit = (code: number): void => {
    bitBuffer |= code << bitCount;
    bitCount += codeSize;
    while (bitCount >= 8) {
      out.byte(bitBuffer & 0xff);
      bitBuffer >>>= 8;
      bitCount -= 8;
    }
  };
  emit(clear);
  let prefix = indices.length > 0 ? (indices[0] ?? 0) : -1;
  for (let i = 1; i < indices.length; i += 1) {
    const symbol = indices[i] ?? 0;
    const key = (prefix << 8) | symbol;
    const found = table.get(key);
    if (found !== undefined) {
      prefix = found;
      continue;
    }
    emit(prefix);
    if (next <= MAX_LZW_CODE) {
      table.set(key, next);
      next += 1;
      // The decoder widens its codes once the next code no longer fits.
      if (next > 1 << codeSize && codeSize < 12) codeSize += 1;
    } else {
      emit(clear);
      table = new Map();
      codeSize = minimumCodeSize + 1;
      next = end + 1;
    }
    prefix = symbol;
  }
  if (prefix >= 0) emit(prefix);
  emit(end);
  if (bitCount > 0) out.byte(bitBuffer & 0xff);
  return out.toBytes();
}

/** GIF89a 15: data sub-blocks of at most 255 bytes, then a zero-length terminator. */
function writeSubBlocks(out: ByteWriter, data: Uint8Array): void {
  for (let offset = 0; offset < data.length; offset += 255) {
    const block = data.subarray(offset, Math.min(data.length, offset + 255));
    out.bytes([block.length]);
    out.bytes(block);
  }
  out.bytes([0]);
}

/** An append-only byte buffer that doubles as it fills. */
class ByteWriter {
  #buffer = new Uint8Array(1024);
  #length = 0;

  byte(value: number): void {
    if (this.#length === this.#buffer.length) {
      const grown = new Uint8Array(this.#buffer.length * 2);
      grown.set(this.#buffer);
      this.#buffer = grown;
    }
    this.#buffer[this.#length] = value;
    this.#length += 1;
  }

  bytes(values: Iterable<number>): void {
    for (const value of values) this.byte(value);
  }

  u16(value: number): void {
    this.byte(value & 0xff);
    this.byte((value >> 8) & 0xff);
  }

  ascii(text: string): void {
    for (let i = 0; i < text.length; i += 1) this.byte(text.charCodeAt(i));
  }

  toBytes(): Uint8Array {
    return this.#buffer.slice(0, this.#length);
  }
}

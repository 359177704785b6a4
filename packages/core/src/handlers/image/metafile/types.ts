import { Rejection } from '../../../_internal/rejection.ts';
import type { FindingKind } from '../../../findings.ts';

/** The limits a metafile's bitmaps are decoded under (the engine's image limits). */
export interface MetafileLimits {
  readonly maxPixels: number;
  readonly maxDecodeBytes: number;
}

/** Where a rebuild counts what it removed (a `FindingTally`). */
export interface MetafileFindings {
  add(kind: FindingKind, count?: number): void;
}

/** Throws the rejection for a metafile that cannot be rebuilt with confidence. */
export function metafileFault(detail: string): never {
  throw new Rejection('invalid_file', `metafile: ${detail}`);
}

/** Little-endian reads that fail as a metafile fault, never past the end. */
export class RecordView {
  readonly bytes: Uint8Array;
  readonly #view: DataView;

  constructor(bytes: Uint8Array) {
    this.bytes = bytes;
    this.#view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  get length(): number {
    return this.bytes.length;
  }

  u16(at: number): number {
    this.#need(at, 2);
    return this.#view.getUint16(at, true);
  }

  i16(at: number): number {
    this.#need(at, 2);
    return this.#view.getInt16(at, true);
  }

  u32(at: number): number {
    this.#need(at, 4);
    return this.#view.getUint32(at, true);
  }

  i32(at: number): number {
    this.#need(at, 4);
    return this.#view.getInt32(at, true);
  }

  /** `length` bytes at `at`, as a view; a fault when they run past the end. */
  sub(at: number, length: number): Uint8Array {
    this.#need(at, length);
    return this.bytes.subarray(at, at + length);
  }

  /** `length` bytes at `at`, copied (a Node Buffer's `slice` would not copy). */
  fresh(at: number, length: number): Uint8Array {
    return new Uint8Array(this.sub(at, length));
  }

  #need(at: number, length: number): void {
    if (!Number.isSafeInteger(at) || at < 0 || length < 0 || at + length > this.bytes.length) {
      metafileFault(`a field at ${at} runs past the end of a ${this.bytes.length}-byte record`);
    }
  }
}

/** Gathers written records and lays them out. */
export class RecordWriter {
  readonly #chunks: Uint8Array[] = [];
  #length = 0;

  get length(): number {
    return this.#length;
  }

  /** Records pushed. */
  get count(): number {
    return this.#chunks.length;
  }

  push(chunk: Uint8Array): void {
    this.#chunks.push(chunk);
    this.#length += chunk.length;
  }

  concat(): Uint8Array {
    const out = new Uint8Array(this.#length);
    let at = 0;
    for (const chunk of this.#chunks) {
      out.set(chunk, at);
      at += chunk.length;
    }
    return out;
  }
}

/** `n` rounded up to a multiple of 4. */
export function pad4(n: number): number {
  return (n + 3) & ~3;
}

import { createHash } from 'node:crypto';

/** True when `bytes` holds `signature` at `offset`. */
export function startsWithAt(bytes: Uint8Array, signature: readonly number[], offset = 0): boolean {
  if (offset < 0 || offset + signature.length > bytes.length) return false;
  for (let i = 0; i < signature.length; i += 1) {
    if (bytes[offset + i] !== signature[i]) return false;
  }
  return true;
}

/** The ASCII codes of `text`, for signatures written as strings. */
export function ascii(text: string): number[] {
  return Array.from({ length: text.length }, (_, i) => text.charCodeAt(i));
}

/** First index of `needle` in `haystack` within `[from, to)`, or -1. */
export function indexOfBytes(
  haystack: Uint8Array,
  needle: readonly number[],
  from = 0,
  to = haystack.length,
): number {
  const end = Math.min(to, haystack.length) - needle.length;
  const first = needle[0];
  outer: for (let i = Math.max(0, from); i <= end; i += 1) {
    if (haystack[i] !== first) continue;
    for (let j = 1; j < needle.length; j += 1) if (haystack[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

/** Little-endian unsigned 16-bit read; the caller has checked the bounds. */
export function u16le(bytes: Uint8Array, offset: number): number {
  return (bytes[offset] ?? 0) | ((bytes[offset + 1] ?? 0) << 8);
}

/** Little-endian unsigned 32-bit read; the caller has checked the bounds. */
export function u32le(bytes: Uint8Array, offset: number): number {
  return (
    ((bytes[offset] ?? 0) |
      ((bytes[offset + 1] ?? 0) << 8) |
      ((bytes[offset + 2] ?? 0) << 16) |
      ((bytes[offset + 3] ?? 0) << 24)) >>>
    0
  );
}

/** Big-endian unsigned 32-bit read; the caller has checked the bounds. */
export function u32be(bytes: Uint8Array, offset: number): number {
  return (
    (((bytes[offset] ?? 0) << 24) |
      ((bytes[offset + 1] ?? 0) << 16) |
      ((bytes[offset + 2] ?? 0) << 8) |
      (bytes[offset + 3] ?? 0)) >>>
    0
  );
}

/** A Buffer view of the same memory (no copy), for Node APIs that want one. */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
}

/** Hex SHA-256 of `bytes`. */
export function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** `1536` -> `1.5 KiB`: sizes in details and logs. */
export function formatBytes(bytes: number): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${bytes} bytes` : `${Number(value.toFixed(1))} ${units[unit] ?? ''}`;
}

import type { Scanner } from './scanner.ts';

/** The 68-byte EICAR anti-virus test string (eicar.org, "Anti Malware Testfile"). */
const EICAR = new TextEncoder().encode(
  'X5O!P%@AP[4\\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*',
);

/** eicar.org: the string may be followed by whitespace, the whole file at most 128 bytes. */
const EICAR_MAX_FILE_BYTES = 128;

/** Threat name reported for the EICAR test file. */
export const EICAR_THREAT_NAME = 'EICAR-Test-File';

/** Space, tab, CR, LF and Ctrl-Z (DOS end of file) may pad the test file. */
function isPadding(byte: number): boolean {
  return byte === 0x20 || byte === 0x09 || byte === 0x0d || byte === 0x0a || byte === 0x1a;
}

/** True when `bytes` is the EICAR test file as eicar.org defines it. */
export function isEicar(bytes: Uint8Array): boolean {
  if (bytes.length < EICAR.length || bytes.length > EICAR_MAX_FILE_BYTES) return false;
  for (let i = 0; i < EICAR.length; i += 1) if (bytes[i] !== EICAR[i]) return false;
  for (let i = EICAR.length; i < bytes.length; i += 1) if (!isPadding(bytes[i] ?? 0)) return false;
  return true;
}

/**
 * The built-in scanner: recognises the EICAR test file, so the threat path can be exercised end
 * to end without a real virus. Pair it with a real engine (ClamAV) in production.
 */
export const builtinScanner: Scanner = {
  name: 'builtin',
  scan(bytes) {
    return Promise.resolve(isEicar(bytes) ? [EICAR_THREAT_NAME] : []);
  },
  async scanFile(file) {
    // The test file is at most 128 bytes: a larger file is not it, and is not read.
    if (file.size > EICAR_MAX_FILE_BYTES) return [];
    const chunks: Uint8Array[] = [];
    for await (const chunk of file.chunks()) chunks.push(chunk);
    return isEicar(Buffer.concat(chunks)) ? [EICAR_THREAT_NAME] : [];
  },
};

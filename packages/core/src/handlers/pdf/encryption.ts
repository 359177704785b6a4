import { createCipheriv, createDecipheriv, createHash } from 'node:crypto';

import { asBuffer, ascii, indexOfBytes } from '../../_internal/bytes.ts';

/**
 * Whether a PDF can be opened without a password: `open` when it is not encrypted or its user
 * password is empty (permissions-only encryption, which a reader opens without asking), else
 * why it cannot.
 */
export type PdfEncryption =
  | { readonly state: 'open'; readonly encrypted: boolean }
  | { readonly state: 'password' | 'corrupt'; readonly detail: string };

/** A parsed PDF object, as far as the encryption dictionary needs (ISO 32000-1 7.3). */
type PdfValue =
  | number
  | boolean
  | null
  | { readonly name: string }
  | { readonly string: Uint8Array }
  | { readonly ref: readonly [number, number] }
  | readonly PdfValue[]
  | ReadonlyMap<string, PdfValue>;

/** How far back from `/Encrypt` the enclosing `trailer` or `obj` keyword may be. */
const MAX_TRAILER_LOOKBACK_BYTES = 8192;
/** Occurrences of `/Encrypt` examined; a real file has one per update. */
const MAX_ENCRYPT_KEYS = 1000;
/** Nesting and element caps for the tiny object parser. */
const MAX_PARSE_DEPTH = 16;
const MAX_PARSE_ITEMS = 4096;
const MAX_STRING_BYTES = 65_536;

/** ISO 32000-1 7.6.3.3 Algorithm 2 step a: the padding string. */
const PASSWORD_PAD = Buffer.from(
  '28bf4e5e4e758a4164004e56fffa01082e2e00b6d0683e802f0ca9fe6453697a',
  'hex',
);

/**
 * Finds the document's encryption dictionary (the trailer's `/Encrypt`, or the cross-reference
 * stream's, ISO 32000-1 7.5.5 and 7.5.8; of several incremental updates, the last) and tests the
 * empty user password: ISO 32000-1 7.6.3.4 Algorithms 6 (RC4/MD5, revisions 2-4) and
 * ISO 32000-2 7.6.4.4.10 Algorithm 11 (AES-256, revisions 5-6). A security handler other than
 * `/Standard` (certificates, plug-ins) always needs something the submitter did not send.
 */
export function probePdfEncryption(bytes: Uint8Array): PdfEncryption {
  const found = findStandardHandler(bytes);
  if (found === undefined) return { state: 'open', encrypted: false };
  if ('state' in found) return found;
  return emptyPasswordAccess(found.dictionary, found.id) !== undefined
    ? { state: 'open', encrypted: true }
    : {
        state: 'password',
        detail: 'the PDF needs a user password to open; it cannot be rebuilt without it',
      };
}

/**
 * What the empty password, taken as the owner password, yields for a parser that only knows user
 * passwords: for revisions 2-4 the user password it decrypts `/O` into (ISO 32000-1 7.6.3.4
 * Algorithm 7), for revisions 5-6 the file encryption key it decrypts `/OE` into (ISO 32000-2
 * 7.6.4.3.3 Algorithm 2.A step d), with the crypt filter methods of strings and streams
 * (7.6.5, `/StrF` and `/StmF`; `Identity` when absent).
 */
export type OwnerAccess =
  | { readonly kind: 'user-password'; readonly password: Uint8Array }
  | {
      readonly kind: 'file-key';
      readonly key: Uint8Array;
      readonly strings: string;
      readonly streams: string;
    };

/**
 * How the empty password opens an encrypted PDF as its owner password, when it does not open it
 * as the user password (a PDF 2.0 writer may leave the owner password empty: any reader then
 * opens the file without asking). Undefined otherwise.
 */
export function emptyOwnerPasswordAccess(bytes: Uint8Array): OwnerAccess | undefined {
  const found = findStandardHandler(bytes);
  if (found === undefined || 'state' in found) return undefined;
  const access = emptyPasswordAccess(found.dictionary, found.id);
  return access === undefined || access === 'user' ? undefined : access;
}

/**
 * The document's `/Standard` encryption dictionary and first file identifier; undefined when the
 * file is not encrypted, a `state` when it cannot be opened or read.
 */
function findStandardHandler(
  bytes: Uint8Array,
):
  | { readonly dictionary: ReadonlyMap<string, PdfValue>; readonly id: Uint8Array }
  | Exclude<PdfEncryption, { state: 'open' }>
  | undefined {
  const trailers = findEncryptingTrailers(bytes);
  const trailer = trailers.at(-1);
  if (!trailer) return undefined;
  const reference = trailer.get('Encrypt');
  const dictionary = isRef(reference) ? findObject(bytes, reference.ref) : reference;
  if (!isDict(dictionary)) {
    return {
      state: 'corrupt',
      detail: 'the PDF is encrypted, but its encryption dictionary cannot be read',
    };
  }
  const filter = nameOf(dictionary.get('Filter'));
  if (filter !== 'Standard') {
    return {
      state: 'password',
      detail: `the PDF is encrypted with the ${filter === undefined ? 'unnamed' : `/${filter}`} security handler (certificates or a plug-in), not a password this engine can test`,
    };
  }
  // ISO 32000-1 7.5.5: an update's trailer may omit /ID; the file's first identifier counts.
  const ids = [...trailers]
    .reverse()
    .find((candidate) => candidate.has('ID'))
    ?.get('ID');
  const firstId = isArray(ids) ? stringOf(ids[0]) : undefined;
  return { dictionary, id: firstId ?? new Uint8Array() };
}

/**
 * A reader tries the empty password as the user password and then as the owner password (which
 * also opens the file); either opening it means the submitter needs no password. `user` when it
 * is the user password, what it yields when it is the owner password, undefined when neither.
 */
function emptyPasswordAccess(
  dictionary: ReadonlyMap<string, PdfValue>,
  id: Uint8Array,
): 'user' | OwnerAccess | undefined {
  const revision = numberOf(dictionary.get('R'));
  const owner = stringOf(dictionary.get('O'));
  const user = stringOf(dictionary.get('U'));
  if (revision === undefined || !owner || !user) return undefined;
  if (revision === 5 || revision === 6) {
    if (user.length < 48 || owner.length < 48) return undefined;
    const empty = Buffer.alloc(0);
    const userKey = Buffer.from(user.subarray(0, 48));
    // Algorithm 11 (user) and Algorithm 12 (owner, salted with the whole U string).
    const userHash =
      revision === 5
        ? sha256(empty, user.subarray(32, 40))
        : hardenedHash(empty, user.subarray(32, 40), empty);
    if (equal(userHash, user.subarray(0, 32))) return 'user';
    const ownerHash =
      revision === 5
        ? sha256(empty, owner.subarray(32, 40), userKey)
        : hardenedHash(empty, owner.subarray(32, 40), userKey);
    if (!equal(ownerHash, owner.subarray(0, 32))) return undefined;
    // Algorithm 2.A step d: the owner key salt gives the key that decrypts /OE (AES-256, no
    // padding, a zero initialisation vector) into the file encryption key.
    const ownerEncryption = stringOf(dictionary.get('OE'));
    if (ownerEncryption === undefined || ownerEncryption.length < 32) return undefined;
    const intermediate =
      revision === 5
        ? sha256(empty, owner.subarray(40, 48), userKey)
        : hardenedHash(empty, owner.subarray(40, 48), userKey);
    const decipher = createDecipheriv('aes-256-cbc', intermediate, Buffer.alloc(16));
    decipher.setAutoPadding(false);
    const key = Buffer.concat([decipher.update(ownerEncryption.subarray(0, 32)), decipher.final()]);
    return {
      kind: 'file-key',
      key,
      strings: cryptFilterMethod(dictionary, 'StrF'),
      streams: cryptFilterMethod(dictionary, 'StmF'),
    };
  }
  if (revision < 2 || revision > 4 || owner.length < 32 || user.length < 32) return undefined;
  const version = numberOf(dictionary.get('V')) ?? 0;
  const bits = numberOf(dictionary.get('Length')) ?? 40;
  const keyBytes =
    revision === 2 ? 5 : version === 4 ? 16 : Math.min(16, Math.max(5, Math.floor(bits / 8)));
  const standard = { dictionary, id, revision, keyBytes, owner: owner.subarray(0, 32) };
  if (userPasswordMatches(standard, PASSWORD_PAD, user)) return 'user';
  // Algorithm 7: the empty owner password decrypts O into the (padded) user password.
  let key = createHash('md5').update(PASSWORD_PAD).digest();
  if (revision >= 3) {
    for (let i = 0; i < 50; i += 1) key = createHash('md5').update(key).digest();
  }
  key = key.subarray(0, keyBytes);
  let padded: Buffer = Buffer.from(owner.subarray(0, 32));
  if (revision === 2) {
    padded = rc4(key, padded);
  } else {
    for (let i = 19; i >= 0; i -= 1)
      padded = rc4(
        key.map((byte) => byte ^ i),
        padded,
      );
  }
  return userPasswordMatches(standard, padded, user)
    ? { kind: 'user-password', password: padded }
    : undefined;
}

/**
 * The method (`/CFM`) of the crypt filter a `/StrF` or `/StmF` entry names (ISO 32000-1 7.6.5):
 * `Identity` for the identity filter or when the entry is absent, `None` when the named filter
 * gives no method, the method's name otherwise.
 */
function cryptFilterMethod(dictionary: ReadonlyMap<string, PdfValue>, entry: string): string {
  const name = nameOf(dictionary.get(entry)) ?? 'Identity';
  if (name === 'Identity') return name;
  const filters = dictionary.get('CF');
  const filter = isDict(filters) ? filters.get(name) : undefined;
  return (isDict(filter) ? nameOf(filter.get('CFM')) : undefined) ?? 'None';
}

interface StandardHandler {
  readonly dictionary: ReadonlyMap<string, PdfValue>;
  readonly id: Uint8Array;
  readonly revision: number;
  readonly keyBytes: number;
  readonly owner: Uint8Array;
}

/** Algorithm 6: computes U from a padded password (Algorithms 2, 4 and 5) and compares it. */
function userPasswordMatches(
  handler: StandardHandler,
  padded: Uint8Array,
  user: Uint8Array,
): boolean {
  const { dictionary, id, revision, keyBytes } = handler;
  const p = Buffer.alloc(4);
  p.writeInt32LE((numberOf(dictionary.get('P')) ?? 0) | 0);
  const md5 = createHash('md5').update(padded).update(handler.owner).update(p).update(id);
  if (revision >= 4 && dictionary.get('EncryptMetadata') === false) {
    md5.update(Buffer.from([0xff, 0xff, 0xff, 0xff]));
  }
  let key = md5.digest();
  if (revision >= 3) {
    for (let i = 0; i < 50; i += 1) {
      key = createHash('md5').update(key.subarray(0, keyBytes)).digest();
    }
  }
  key = key.subarray(0, keyBytes);
  if (revision === 2) return equal(rc4(key, PASSWORD_PAD), user.subarray(0, 32));
  let value = rc4(key, createHash('md5').update(PASSWORD_PAD).update(id).digest());
  for (let i = 1; i <= 19; i += 1)
    value = rc4(
      key.map((byte) => byte ^ i),
      value,
    );
  return equal(value.subarray(0, 16), user.subarray(0, 16));
}

function sha256(...parts: Uint8Array[]): Buffer {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part);
  return hash.digest();
}

function equal(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.compare(Buffer.from(a), Buffer.from(b)) === 0;
}

/** ISO 32000-2 7.6.4.3.4 Algorithm 2.B. */
function hardenedHash(password: Buffer, salt: Uint8Array, userKey: Buffer): Buffer {
  let k = sha256(password, salt, userKey);
  let e = Buffer.alloc(0);
  for (let round = 0; round < 64 || (e[e.length - 1] ?? 0) > round - 32; round += 1) {
    const block = Buffer.concat([password, k, userKey]);
    const k1 = Buffer.concat(Array.from({ length: 64 }, () => block));
    const cipher = createCipheriv('aes-128-cbc', k.subarray(0, 16), k.subarray(16, 32));
    cipher.setAutoPadding(false);
    e = Buffer.concat([cipher.update(k1), cipher.final()]);
    // The first 16 bytes as a big-endian number modulo 3: 256 is 1 modulo 3, so the byte sum.
    let sum = 0;
    for (let i = 0; i < 16; i += 1) sum += e[i] ?? 0;
    k = createHash(['sha256', 'sha384', 'sha512'][sum % 3] ?? 'sha256')
      .update(e)
      .digest();
  }
  return k.subarray(0, 32);
}

/** RC4 (ISO 32000-1 7.6.2): OpenSSL 3 only has it in the legacy provider. */
function rc4(key: Uint8Array, data: Uint8Array): Buffer {
  const s = Uint8Array.from({ length: 256 }, (_, i) => i);
  for (let i = 0, j = 0; i < 256; i += 1) {
    j = (j + (s[i] ?? 0) + (key[i % key.length] ?? 0)) & 0xff;
    [s[i], s[j]] = [s[j] ?? 0, s[i] ?? 0];
  }
  const out = Buffer.alloc(data.length);
  for (let n = 0, i = 0, j = 0; n < data.length; n += 1) {
    i = (i + 1) & 0xff;
    j = (j + (s[i] ?? 0)) & 0xff;
    [s[i], s[j]] = [s[j] ?? 0, s[i] ?? 0];
    out[n] = (data[n] ?? 0) ^ (s[((s[i] ?? 0) + (s[j] ?? 0)) & 0xff] ?? 0);
  }
  return out;
}

/**
 * The trailer dictionaries (classic `trailer << >>` or `/Type /XRef` stream dictionaries) that
 * hold an `/Encrypt` key, in file order (incremental updates append, so the last is the newest).
 * Each `/Encrypt` key in the file is traced back to the dictionary that holds it; one inside
 * anything else (a content stream, a string) is not a trailer's.
 */
function findEncryptingTrailers(bytes: Uint8Array): ReadonlyMap<string, PdfValue>[] {
  const key = ascii('/Encrypt');
  const found: ReadonlyMap<string, PdfValue>[] = [];
  let at = find(bytes, key, 0);
  for (let seen = 0; at >= 0 && seen < MAX_ENCRYPT_KEYS; seen += 1) {
    const next = bytes[at + key.length] ?? 0;
    if (!isRegular(next)) {
      const trailer = enclosingTrailer(bytes, at);
      if (trailer?.has('Encrypt') === true) found.push(trailer);
    }
    at = find(bytes, key, at + key.length);
  }
  return found;
}

/** Native search over the whole file (a PDF may be 100 MB). */
function find(bytes: Uint8Array, needle: readonly number[], from: number): number {
  return asBuffer(bytes).indexOf(Uint8Array.from(needle), from);
}

function enclosingTrailer(
  bytes: Uint8Array,
  keyAt: number,
): ReadonlyMap<string, PdfValue> | undefined {
  const from = Math.max(0, keyAt - MAX_TRAILER_LOOKBACK_BYTES);
  const trailerAt = lastIndexOf(bytes, ascii('trailer'), from, keyAt);
  const objAt = lastIndexOf(bytes, ascii('obj'), from, keyAt);
  if (trailerAt >= 0 && trailerAt > objAt) {
    const value = parseAt(bytes, trailerAt + 'trailer'.length);
    return isDict(value) ? value : undefined;
  }
  if (objAt < 0) return undefined;
  const value = parseAt(bytes, objAt + 'obj'.length);
  return isDict(value) && nameOf(value.get('Type')) === 'XRef' ? value : undefined;
}

/** The last `N G obj` in the file (the newest revision of the object) and its value. */
function findObject(
  bytes: Uint8Array,
  [number, generation]: readonly [number, number],
): PdfValue | undefined {
  const header = ascii(`${number} ${generation} obj`);
  let last = -1;
  let at = find(bytes, header, 0);
  while (at >= 0) {
    // `15 0 obj` must not match inside `115 0 obj`.
    if (at === 0 || isWhitespace(bytes[at - 1] ?? 0)) last = at;
    at = find(bytes, header, at + header.length);
  }
  return last < 0 ? undefined : parseAt(bytes, last + header.length);
}

function lastIndexOf(
  bytes: Uint8Array,
  needle: readonly number[],
  from: number,
  to: number,
): number {
  let result = -1;
  let at = indexOfBytes(bytes, needle, from, to);
  while (at >= 0) {
    result = at;
    at = indexOfBytes(bytes, needle, at + 1, to);
  }
  return result;
}

function parseAt(bytes: Uint8Array, offset: number): PdfValue | undefined {
  try {
    return new Parser(bytes, offset).value(0);
  } catch (error) {
    if (error instanceof ParseError) return undefined;
    throw error;
  }
}

class ParseError extends Error {}

/** ISO 32000-1 7.2.2: white-space and delimiter characters; anything else is "regular". */
function isWhitespace(byte: number): boolean {
  return byte === 0 || byte === 9 || byte === 10 || byte === 12 || byte === 13 || byte === 32;
}

function isDelimiter(byte: number): boolean {
  return '()<>[]{}/%'.includes(String.fromCharCode(byte));
}

function isRegular(byte: number): boolean {
  return !isWhitespace(byte) && !isDelimiter(byte);
}

/** Just enough of ISO 32000-1 7.3 to read a trailer and an encryption dictionary. */
class Parser {
  readonly #bytes: Uint8Array;
  #at: number;
  #items = 0;

  constructor(bytes: Uint8Array, offset: number) {
    this.#bytes = bytes;
    this.#at = offset;
  }

  value(depth: number): PdfValue {
    if (depth > MAX_PARSE_DEPTH || (this.#items += 1) > MAX_PARSE_ITEMS) {
      throw new ParseError('too deep');
    }
    this.#skip();
    const byte = this.#peek();
    if (byte === 0x3c && this.#peek(1) === 0x3c) return this.#dictionary(depth);
    if (byte === 0x3c) return { string: this.#hexString() };
    if (byte === 0x28) return { string: this.#literalString() };
    if (byte === 0x5b) return this.#array(depth);
    if (byte === 0x2f) return { name: this.#name() };
    const token = this.#token();
    if (token === 'true') return true;
    if (token === 'false') return false;
    if (token === 'null') return null;
    const number = Number(token);
    if (token === '' || Number.isNaN(number)) throw new ParseError(`unexpected ${token}`);
    if (Number.isInteger(number)) {
      // `N G R`: an indirect reference (7.3.10).
      const mark = this.#at;
      this.#skip();
      const generation = this.#token();
      this.#skip();
      if (/^\d+$/.test(generation) && this.#token() === 'R') {
        return { ref: [number, Number(generation)] };
      }
      this.#at = mark;
    }
    return number;
  }

  #dictionary(depth: number): ReadonlyMap<string, PdfValue> {
    this.#at += 2;
    const entries = new Map<string, PdfValue>();
    for (;;) {
      this.#skip();
      if (this.#peek() === 0x3e && this.#peek(1) === 0x3e) {
        this.#at += 2;
        return entries;
      }
      if (this.#peek() !== 0x2f) throw new ParseError('a dictionary key is not a name');
      const key = this.#name();
      entries.set(key, this.value(depth + 1));
    }
  }

  #array(depth: number): readonly PdfValue[] {
    this.#at += 1;
    const items: PdfValue[] = [];
    for (;;) {
      this.#skip();
      if (this.#peek() === 0x5d) {
        this.#at += 1;
        return items;
      }
      items.push(this.value(depth + 1));
    }
  }

  #name(): string {
    this.#at += 1;
    let name = '';
    while (this.#at < this.#bytes.length && isRegular(this.#peek())) {
      const byte = this.#next();
      if (byte === 0x23) {
        // 7.3.5: #xx escapes.
        name += String.fromCharCode(
          Number.parseInt(String.fromCharCode(this.#next(), this.#next()), 16),
        );
      } else {
        name += String.fromCharCode(byte);
      }
    }
    return name;
  }

  #hexString(): Uint8Array {
    this.#at += 1;
    let digits = '';
    for (;;) {
      const byte = this.#next();
      if (byte === 0x3e) break;
      if (!isWhitespace(byte)) digits += String.fromCharCode(byte);
      if (digits.length > MAX_STRING_BYTES * 2) throw new ParseError('string too long');
    }
    if (!/^[0-9a-fA-F]*$/.test(digits)) throw new ParseError('bad hex string');
    return Buffer.from(digits.length % 2 === 0 ? digits : `${digits}0`, 'hex');
  }

  /** 7.3.4.2: balanced parentheses, backslash escapes, octal codes, line continuations. */
  #literalString(): Uint8Array {
    this.#at += 1;
    const out: number[] = [];
    let nesting = 1;
    for (;;) {
      if (out.length > MAX_STRING_BYTES) throw new ParseError('string too long');
      const byte = this.#next();
      if (byte === 0x28) nesting += 1;
      if (byte === 0x29 && (nesting -= 1) === 0) return Uint8Array.from(out);
      if (byte !== 0x5c) {
        out.push(byte);
        continue;
      }
      const escaped = this.#next();
      const simple: Record<number, number> = { 0x6e: 10, 0x72: 13, 0x74: 9, 0x62: 8, 0x66: 12 };
      if (simple[escaped] !== undefined) out.push(simple[escaped]);
      else if (escaped >= 0x30 && escaped <= 0x37) {
        let code = escaped - 0x30;
        for (let i = 0; i < 2 && this.#peek() >= 0x30 && this.#peek() <= 0x37; i += 1) {
          code = code * 8 + (this.#next() - 0x30);
        }
        out.push(code & 0xff);
      } else if (escaped === 0x0d) {
        if (this.#peek() === 0x0a) this.#at += 1;
      } else if (escaped !== 0x0a) out.push(escaped);
    }
  }

  #token(): string {
    const start = this.#at;
    while (this.#at < this.#bytes.length && isRegular(this.#peek())) this.#at += 1;
    return Buffer.from(this.#bytes.subarray(start, this.#at)).toString('latin1');
  }

  #skip(): void {
    while (this.#at < this.#bytes.length) {
      const byte = this.#peek();
      if (isWhitespace(byte)) this.#at += 1;
      else if (byte === 0x25) {
        while (this.#at < this.#bytes.length && this.#peek() !== 10 && this.#peek() !== 13)
          this.#at += 1;
      } else return;
    }
  }

  #peek(ahead = 0): number {
    return this.#bytes[this.#at + ahead] ?? -1;
  }

  #next(): number {
    if (this.#at >= this.#bytes.length) throw new ParseError('unexpected end of file');
    const byte = this.#bytes[this.#at] ?? 0;
    this.#at += 1;
    return byte;
  }
}

function isArray(value: PdfValue | undefined): value is readonly PdfValue[] {
  return Array.isArray(value);
}

function isDict(value: PdfValue | undefined): value is ReadonlyMap<string, PdfValue> {
  return value instanceof Map;
}

function isRef(value: PdfValue | undefined): value is { readonly ref: readonly [number, number] } {
  return typeof value === 'object' && value !== null && 'ref' in value;
}

function nameOf(value: PdfValue | undefined): string | undefined {
  return typeof value === 'object' && value !== null && 'name' in value ? value.name : undefined;
}

function stringOf(value: PdfValue | undefined): Uint8Array | undefined {
  return typeof value === 'object' && value !== null && 'string' in value
    ? value.string
    : undefined;
}

function numberOf(value: PdfValue | undefined): number | undefined {
  return typeof value === 'number' ? value : undefined;
}

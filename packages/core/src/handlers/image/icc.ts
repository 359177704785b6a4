import { createHash } from 'node:crypto';
import {
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// References: ICC.1:2001-04 (profile version 2.4), sections cited as "ICC.1 x.y".

/** The colour spaces whose profile the rebuild writes itself, in place of the file's own. */
export type CanonicalProfileName = 'srgb' | 'display-p3' | 'adobe-rgb' | 'grey-gamma-2.2';

/** Largest input profile looked at; a larger one is not recognised (and so converted away). */
const MAX_PROFILE_BYTES = 4 * 1024 * 1024;
/** Tags read from one input profile at most. */
const MAX_TAGS = 200;
const HEADER_BYTES = 128;

type Xyz = readonly [number, number, number];
type Trc = (x: number) => number;

/** D50-adapted colourants (ICC.1 6.3.4.3) and tone curves of the colour spaces we recognise. */
interface RgbSpace {
  readonly name: CanonicalProfileName;
  readonly description: string;
  readonly red: Xyz;
  readonly green: Xyz;
  readonly blue: Xyz;
  readonly trc: Trc;
  /** How the tone curve is written in our copy: a gamma or a sampled table. */
  readonly trcEncoding: { readonly gamma: number } | { readonly table: Trc };
}

/** IEC 61966-2-1 4.2: the sRGB transfer function (also Display P3's). */
function srgbTrc(x: number): number {
  return x <= 0.04045 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4;
}

/** Adobe RGB (1998) 4.3.1.2: gamma 563/256, stored as u8Fixed8 in its own profile. */
const ADOBE_GAMMA = 563 / 256;

const RGB_SPACES: readonly RgbSpace[] = [
  {
    name: 'srgb',
    description: 'sRGB IEC61966-2.1 (disarm)',
    red: [0.43607, 0.22249, 0.01392],
    green: [0.38515, 0.71687, 0.09708],
    blue: [0.14307, 0.06061, 0.7141],
    trc: srgbTrc,
    trcEncoding: { table: srgbTrc },
  },
  {
    name: 'display-p3',
    description: 'Display P3 (disarm)',
    red: [0.51512, 0.2412, -0.00105],
    green: [0.29198, 0.69225, 0.04189],
    blue: [0.1571, 0.06657, 0.78407],
    trc: srgbTrc,
    trcEncoding: { table: srgbTrc },
  },
  {
    name: 'adobe-rgb',
    description: 'Adobe RGB (1998) compatible (disarm)',
    red: [0.60974, 0.31111, 0.01947],
    green: [0.20528, 0.62567, 0.06087],
    blue: [0.14919, 0.06322, 0.74457],
    trc: (x) => x ** ADOBE_GAMMA,
    trcEncoding: { gamma: ADOBE_GAMMA },
  },
];

const GREY_GAMMA = 2.2;
const GREY_DESCRIPTION = 'Grey gamma 2.2 (disarm)';

/** How far a colourant may stray (XYZ units) and still be the colour space's. */
const COLOURANT_TOLERANCE = 0.004;
/** How far a tone curve may stray (0..1 output) at the sample points. */
const TRC_TOLERANCE = 0.01;
const TRC_SAMPLES = [0.02, 0.1, 0.25, 0.5, 0.75, 0.9, 1];

/** ICC.1 6.3.4.3 / CIE: the D50 illuminant of the profile connection space. */
const D50: Xyz = [0.9642, 1, 0.8249];

/**
 * Recognises a colour profile by what it does, not by its name: an RGB matrix/TRC profile whose
 * colourants and tone curves are those of sRGB, Display P3 or Adobe RGB (1998), or a grey profile
 * with a gamma 2.2 curve. Private tags, names and everything else in the profile are ignored (and
 * never copied: the rebuild writes {@link canonicalProfile} instead).
 *
 * @returns the canonical profile standing in for `profile`, or `undefined` when it is not
 *   recognised (the rebuild then converts the pixels to sRGB and drops it). Never throws.
 */
export function recogniseProfile(profile: Uint8Array): CanonicalProfileName | undefined {
  const parsed = parseProfile(profile);
  if (parsed === undefined) return undefined;
  if (parsed.space === 'GRAY') {
    const grey = parsed.curve('kTRC');
    return grey !== undefined && curveMatches(grey, (x) => x ** GREY_GAMMA)
      ? 'grey-gamma-2.2'
      : undefined;
  }
  if (parsed.space !== 'RGB ' || parsed.pcs !== 'XYZ ') return undefined;
  const red = parsed.xyz('rXYZ');
  const green = parsed.xyz('gXYZ');
  const blue = parsed.xyz('bXYZ');
  const curves = [parsed.curve('rTRC'), parsed.curve('gTRC'), parsed.curve('bTRC')];
  if (red === undefined || green === undefined || blue === undefined) return undefined;
  for (const space of RGB_SPACES) {
    if (
      xyzMatches(red, space.red) &&
      xyzMatches(green, space.green) &&
      xyzMatches(blue, space.blue) &&
      curves.every((curve) => curve !== undefined && curveMatches(curve, space.trc))
    ) {
      return space.name;
    }
  }
  return undefined;
}

function xyzMatches(actual: Xyz, expected: Xyz): boolean {
  return actual.every((value, i) => Math.abs(value - (expected[i] ?? 0)) <= COLOURANT_TOLERANCE);
}

function curveMatches(actual: Trc, expected: Trc): boolean {
  return TRC_SAMPLES.every((x) => Math.abs(actual(x) - expected(x)) <= TRC_TOLERANCE);
}

interface ParsedProfile {
  readonly space: string;
  readonly pcs: string;
  xyz(tag: string): Xyz | undefined;
  curve(tag: string): Trc | undefined;
}

function parseProfile(profile: Uint8Array): ParsedProfile | undefined {
  if (profile.length < HEADER_BYTES + 4 || profile.length > MAX_PROFILE_BYTES) return undefined;
  const view = new DataView(profile.buffer, profile.byteOffset, profile.byteLength);
  // ICC.1 6.1: the profile size field, and 'acsp' at byte 36.
  if (view.getUint32(0) > profile.length || signature(view, 36) !== 'acsp') return undefined;
  const count = view.getUint32(HEADER_BYTES);
  if (count > MAX_TAGS || HEADER_BYTES + 4 + count * 12 > profile.length) return undefined;
  const tags = new Map<string, { offset: number; size: number }>();
  for (let i = 0; i < count; i += 1) {
    const entry = HEADER_BYTES + 4 + i * 12;
    const offset = view.getUint32(entry + 4);
    const size = view.getUint32(entry + 8);
    if (offset + size > profile.length || size < 8) continue;
    tags.set(signature(view, entry), { offset, size });
  }
  return {
    space: signature(view, 16),
    pcs: signature(view, 20),
    xyz(tag) {
      const at = tags.get(tag);
      // ICC.1 6.5.26 XYZType: 'XYZ ', reserved, one s15Fixed16 triple.
      if (at === undefined || at.size < 20 || signature(view, at.offset) !== 'XYZ ')
        return undefined;
      const read = (i: number): number => view.getInt32(at.offset + 8 + i * 4) / 65536;
      return [read(0), read(1), read(2)];
    },
    curve(tag) {
      const at = tags.get(tag);
      return at === undefined ? undefined : readCurve(view, at.offset, at.size);
    },
  };
}

/** ICC.1 6.5.3 curveType ('curv') and ICC.1:2010 10.16 parametricCurveType ('para'). */
function readCurve(view: DataView, offset: number, size: number): Trc | undefined {
  const type = signature(view, offset);
  if (type === 'curv' && size >= 12) {
    const entries = view.getUint32(offset + 8);
    if (12 + entries * 2 > size) return undefined;
    if (entries === 0) return (x) => x;
    if (entries === 1) {
      const gamma = view.getUint16(offset + 12) / 256;
      return (x) => x ** gamma;
    }
    return (x) => {
      const position = x * (entries - 1);
      const low = Math.floor(position);
      const high = Math.min(entries - 1, low + 1);
      const a = view.getUint16(offset + 12 + low * 2) / 65535;
      const b = view.getUint16(offset + 12 + high * 2) / 65535;
      return a + (b - a) * (position - low);
    };
  }
  if (type === 'para' && size >= 16) {
    const kind = view.getUint16(offset + 8);
    const needed = [1, 3, 4, 5, 7][kind];
    if (needed === undefined || 12 + needed * 4 > size) return undefined;
    const p = Array.from({ length: 7 }, (_, i) =>
      i < needed ? view.getInt32(offset + 12 + i * 4) / 65536 : 0,
    );
    const [g = 1, a = 1, b = 0, c = 0, d = 0, e = 0, f = 0] = p;
    switch (kind) {
      case 0:
        return (x) => x ** g;
      case 1:
        return (x) => (x >= -b / a ? (a * x + b) ** g : 0);
      case 2:
        return (x) => (x >= -b / a ? (a * x + b) ** g + c : c);
      case 3:
        return (x) => (x >= d ? (a * x + b) ** g : c * x);
      default:
        return (x) => (x >= d ? (a * x + b) ** g + e : c * x + f);
    }
  }
  return undefined;
}

function signature(view: DataView, offset: number): string {
  return String.fromCharCode(
    view.getUint8(offset),
    view.getUint8(offset + 1),
    view.getUint8(offset + 2),
    view.getUint8(offset + 3),
  );
}

const cache = new Map<CanonicalProfileName, Uint8Array>();

/**
 * Our own copy of a colour space's profile: a minimal ICC v2.1 display profile (ICC.1 8.4.1
 * matrix/TRC, or 8.4.2 grey TRC) built in code from the published primaries and transfer
 * function, so the only profile an output ever carries is one of these exact byte strings.
 */
export function canonicalProfile(name: CanonicalProfileName): Uint8Array {
  const cached = cache.get(name);
  if (cached !== undefined) return cached;
  const space = RGB_SPACES.find((candidate) => candidate.name === name);
  const bytes =
    space === undefined
      ? buildProfile({ grey: true, description: GREY_DESCRIPTION, gamma: GREY_GAMMA })
      : buildProfile({ grey: false, description: space.description, space });
  cache.set(name, bytes);
  return bytes;
}

/** True when `profile` is byte-identical to one of our canonical profiles. */
export function isCanonicalProfile(profile: Uint8Array): boolean {
  const names: readonly CanonicalProfileName[] = [
    'srgb',
    'display-p3',
    'adobe-rgb',
    'grey-gamma-2.2',
  ];
  return names.some((name) => Buffer.from(canonicalProfile(name)).equals(profile));
}

const paths = new Map<CanonicalProfileName, string>();

/**
 * A file holding {@link canonicalProfile}, for sharp's `withIccProfile` (which takes a path). The
 * files live in a directory only this user can write (`<tmpdir>/disarm-icc-<uid>`, mode 0700,
 * checked to be ours and not a link; otherwise a fresh `mkdtemp` directory), named by their
 * content and written atomically, so processes share them and no other local user can plant or
 * swap one. Verify before release compares the embedded bytes with {@link canonicalProfile}.
 */
export function canonicalProfilePath(name: CanonicalProfileName): string {
  const known = paths.get(name);
  if (known !== undefined) return known;
  const bytes = canonicalProfile(name);
  const hash = createHash('sha256').update(bytes).digest('hex').slice(0, 16);
  const path = join(privateDirectory(), `${name}-${hash}.icc`);
  if (!hasBytes(path, bytes)) {
    const staging = `${path}.${process.pid}.tmp`;
    writeFileSync(staging, bytes, { mode: 0o600 });
    renameSync(staging, path);
  }
  paths.set(name, path);
  return path;
}

function privateDirectory(): string {
  const uid = process.getuid?.() ?? 0;
  const shared = join(tmpdir(), `disarm-icc-${uid}`);
  try {
    mkdirSync(shared, { mode: 0o700 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const stats = lstatSync(shared);
  const ours =
    stats.isDirectory() &&
    !stats.isSymbolicLink() &&
    (process.getuid === undefined || stats.uid === uid) &&
    (stats.mode & 0o077) === 0;
  return ours ? shared : mkdtempSync(join(tmpdir(), 'disarm-icc-'));
}

function hasBytes(path: string, bytes: Uint8Array): boolean {
  try {
    return Buffer.from(bytes).equals(readFileSync(path));
  } catch {
    return false;
  }
}

type ProfileSpec =
  | { grey: true; description: string; gamma: number }
  | { grey: false; description: string; space: RgbSpace };

/** Entries of a sampled tone curve: enough that interpolation error is below 8-bit steps. */
const TRC_TABLE_ENTRIES = 1024;

function buildProfile(spec: ProfileSpec): Uint8Array {
  const tags: [string, Uint8Array][] = [
    ['desc', textDescription(spec.description)],
    ['cprt', text('No copyright, use freely')],
    ['wtpt', xyzType(D50)],
  ];
  if (spec.grey) {
    tags.push(['kTRC', gammaCurve(spec.gamma)]);
  } else {
    const { space } = spec;
    const curve =
      'gamma' in space.trcEncoding
        ? gammaCurve(space.trcEncoding.gamma)
        : tableCurve(space.trcEncoding.table);
    tags.push(
      ['rXYZ', xyzType(space.red)],
      ['gXYZ', xyzType(space.green)],
      ['bXYZ', xyzType(space.blue)],
      ['rTRC', curve],
      ['gTRC', curve],
      ['bTRC', curve],
    );
  }
  // ICC.1 6.2: tag data 4-byte aligned after the tag table; identical data may be shared.
  const tableBytes = 4 + tags.length * 12;
  const offsets = new Map<Uint8Array, number>();
  let cursor = HEADER_BYTES + tableBytes;
  for (const [, data] of tags) {
    if (offsets.has(data)) continue;
    offsets.set(data, cursor);
    cursor += align4(data.length);
  }
  const out = new Uint8Array(cursor);
  const view = new DataView(out.buffer);
  view.setUint32(0, cursor);
  view.setUint32(8, 0x02100000); // version 2.1
  writeSignature(view, 12, 'mntr');
  writeSignature(view, 16, spec.grey ? 'GRAY' : 'RGB ');
  writeSignature(view, 20, 'XYZ ');
  // ICC.1 6.1.6 dateTimeNumber: fixed, so the profile's bytes never change.
  [2026, 1, 1, 0, 0, 0].forEach((value, i) => {
    view.setUint16(24 + i * 2, value);
  });
  writeSignature(view, 36, 'acsp');
  D50.forEach((value, i) => {
    view.setInt32(68 + i * 4, Math.round(value * 65536));
  });
  view.setUint32(HEADER_BYTES, tags.length);
  tags.forEach(([tag, data], i) => {
    const entry = HEADER_BYTES + 4 + i * 12;
    writeSignature(view, entry, tag);
    view.setUint32(entry + 4, offsets.get(data) ?? 0);
    view.setUint32(entry + 8, data.length);
    out.set(data, offsets.get(data) ?? 0);
  });
  return out;
}

function align4(length: number): number {
  return (length + 3) & ~3;
}

function writeSignature(view: DataView, offset: number, value: string): void {
  for (let i = 0; i < 4; i += 1) view.setUint8(offset + i, value.charCodeAt(i));
}

/** ICC.1 6.5.17 textDescriptionType: ASCII part, empty Unicode and ScriptCode parts. */
function textDescription(value: string): Uint8Array {
  const out = new Uint8Array(8 + 4 + value.length + 1 + 8 + 3 + 67);
  const view = new DataView(out.buffer);
  writeSignature(view, 0, 'desc');
  view.setUint32(8, value.length + 1);
  for (let i = 0; i < value.length; i += 1) out[12 + i] = value.charCodeAt(i);
  return out;
}

/** ICC.1 6.5.18 textType. */
function text(value: string): Uint8Array {
  const out = new Uint8Array(8 + value.length + 1);
  writeSignature(new DataView(out.buffer), 0, 'text');
  for (let i = 0; i < value.length; i += 1) out[8 + i] = value.charCodeAt(i);
  return out;
}

/** ICC.1 6.5.26 XYZType. */
function xyzType(value: Xyz): Uint8Array {
  const out = new Uint8Array(20);
  const view = new DataView(out.buffer);
  writeSignature(view, 0, 'XYZ ');
  value.forEach((component, i) => {
    view.setInt32(8 + i * 4, Math.round(component * 65536));
  });
  return out;
}

/** ICC.1 6.5.3 curveType with one entry: a pure gamma in u8Fixed8. */
function gammaCurve(gamma: number): Uint8Array {
  const out = new Uint8Array(14);
  const view = new DataView(out.buffer);
  writeSignature(view, 0, 'curv');
  view.setUint32(8, 1);
  view.setUint16(12, Math.round(gamma * 256));
  return out;
}

/** ICC.1 6.5.3 curveType sampled at {@link TRC_TABLE_ENTRIES} points. */
function tableCurve(trc: Trc): Uint8Array {
  const out = new Uint8Array(12 + TRC_TABLE_ENTRIES * 2);
  const view = new DataView(out.buffer);
  writeSignature(view, 0, 'curv');
  view.setUint32(8, TRC_TABLE_ENTRIES);
  for (let i = 0; i < TRC_TABLE_ENTRIES; i += 1) {
    view.setUint16(12 + i * 2, Math.round(trc(i / (TRC_TABLE_ENTRIES - 1)) * 65535));
  }
  return out;
}

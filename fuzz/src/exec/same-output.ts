/**
 * Whether a cleaned output disarmed again came back the same. Byte for byte, except where a lossy
 * codec re-encodes: a JPEG or lossy WebP (or JPEG-in-TIFF) is decoded and re-encoded on every
 * pass, and lossy encoders do not reach a fixed point (measured: 8 passes of a JPEG at the
 * engine's quality still change it), so those pictures — alone or as members of a zip, an OOXML
 * or an ODF package — must decode to the same geometry and pixels within
 * {@link MAX_LOSSY_MEAN_DRIFT_LEVELS}. Everything else in the file must be identical.
 */
import sharp from 'sharp';

import { readZipMembers } from '../layout/zip.ts';

/**
 * Mean absolute difference per sample (0-255) a lossy re-encode may drift by. A sanity bound, not
 * a fidelity target: one generation of the engine's JPEG and WebP re-encoding drifts about 1
 * level on the fixtures, but up to 15 on the noise a mutated scan decodes to (measured in the
 * fuzz runs); what it catches is a gross transform applied again on every pass — channels
 * swapped, a colour conversion or an orientation applied twice — which moves the mean by far more.
 */
export const MAX_LOSSY_MEAN_DRIFT_LEVELS = 24;

const LOSSY_EXTENSIONS = /\.(jpe?g|webp|tiff?)$/i;

/** What differs between two outputs, or `undefined` when they are the same (as above). */
export async function outputDifference(
  first: Uint8Array,
  second: Uint8Array,
  fileName: string,
): Promise<string | undefined> {
  if (Buffer.from(first).equals(Buffer.from(second))) return undefined;
  if (LOSSY_EXTENSIONS.test(fileName)) return pixelDrift(first, second, fileName);
  const before = first[0] === 0x50 && first[1] === 0x4b ? readZipMembers(first) : undefined;
  const after = before ? readZipMembers(second) : undefined;
  if (!before || !after) return `came back different (${first.length} -> ${second.length} bytes)`;
  const names = (members: typeof before): string => members.map((member) => member.name).join(', ');
  if (names(before) !== names(after))
    return `came back with other members (${names(before)} -> ${names(after)})`;
  for (const [index, member] of before.entries()) {
    const other = after[index];
    if (!other || Buffer.from(member.data).equals(Buffer.from(other.data))) continue;
    if (!LOSSY_EXTENSIONS.test(member.name))
      return `came back with member "${member.name}" different`;
    const drift = await pixelDrift(member.data, other.data, member.name);
    if (drift !== undefined) return drift;
  }
  return undefined;
}

async function pixelDrift(
  first: Uint8Array,
  second: Uint8Array,
  name: string,
): Promise<string | undefined> {
  try {
    const [a, b] = await Promise.all(
      [first, second].map((bytes) =>
        sharp(bytes, { pages: -1 }).raw().toBuffer({ resolveWithObject: true }),
      ),
    );
    if (!a || !b) return `"${name}" does not decode`;
    if (
      a.info.width !== b.info.width ||
      a.info.height !== b.info.height ||
      a.info.channels !== b.info.channels
    ) {
      return `"${name}" came back ${b.info.width}x${b.info.height}x${b.info.channels}, was ${a.info.width}x${a.info.height}x${a.info.channels}`;
    }
    let total = 0;
    for (let i = 0; i < a.data.length; i += 1)
      total += Math.abs((a.data[i] ?? 0) - (b.data[i] ?? 0));
    const mean = total / Math.max(1, a.data.length);
    return mean > MAX_LOSSY_MEAN_DRIFT_LEVELS
      ? `"${name}" drifted ${mean.toFixed(1)} levels on average after a lossy re-encode`
      : undefined;
  } catch (error) {
    return `"${name}" does not decode: ${error instanceof Error ? error.message : String(error)}`;
  }
}

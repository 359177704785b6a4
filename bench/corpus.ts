/**
 * The bench corpus, generated in code from fixed seeds: photo-like images (smooth gradients, soft
 * highlights, hard edges, texture and sensor-like noise, so encoders work and compress as they
 * would on real photos) in every image format, zips of JPEG and PNG members, and gzipped PNGs.
 * The same profile always yields the same pixels; a format's folder is reused while its manifest
 * matches.
 */
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';

import { seededRandom } from '@disarm/fixtures';
import sharp from 'sharp';
import type { Sharp } from 'sharp';
import yazl from 'yazl';

import { writeBmp24 } from './bmp.ts';
import type {
  BenchFormat,
  CorpusFile,
  CorpusProfile,
  EncodingHints,
  FormatCorpus,
} from './types.ts';

/** Bump when the generated content changes, so cached corpora are rebuilt. */
const CORPUS_VERSION = 3;
/** Peak-to-peak amplitude of the per-sample noise, in 8-bit levels. */
const NOISE_LEVELS = 14;
/** Luminance texture: lattice spacing and amplitude (8-bit levels) at a fine and a coarse scale. */
const FINE_TEXTURE_CELL_PX = 3;
const FINE_TEXTURE_LEVELS = 16;
const COARSE_TEXTURE_CELL_PX = 17;
const COARSE_TEXTURE_LEVELS = 24;
/** Hard-edged rectangles per image. */
const SHAPES = 8;
/** Quality of the generated (camera-like) JPEGs and lossy WebPs. */
const SOURCE_JPEG_QUALITY = 85;
const SOURCE_WEBP_QUALITY = 80;
/** Quantisation effort of the generated GIFs: sharp's default (7) takes ~10 s per 1080p frame. */
const SOURCE_GIF_EFFORT = 4;
/** Horizontal pan between two frames of a generated animation. */
const FRAME_STEP_PX = 6;
const FRAME_DELAY_MS = 100;
/** Modification time of generated zip members: fixed, so archives are byte-for-byte stable. */
const ZIP_MEMBER_MTIME = new Date(Date.UTC(2024, 0, 1));

/** A group of same-sized images in a plan; `frames` > 1 makes an animation. */
interface SizeGroup {
  readonly width: number;
  readonly height: number;
  readonly count: number;
  readonly frames?: number;
}

interface ArchivePlan {
  readonly archives: number;
  /** Members alternate JPEG (even index) and PNG (odd index). */
  readonly members: number;
  readonly jpeg: SizeGroup;
  readonly png: SizeGroup;
}

interface ProfilePlan {
  readonly photos: readonly SizeGroup[];
  readonly gif: readonly SizeGroup[];
  readonly zip: ArchivePlan;
  readonly gz: readonly SizeGroup[];
}

const PLANS: Readonly<Record<CorpusProfile, ProfilePlan>> = {
  full: {
    photos: [
      { width: 640, height: 480, count: 8 },
      { width: 1366, height: 768, count: 4 },
      { width: 1920, height: 1080, count: 5 },
      { width: 4000, height: 3000, count: 3 },
    ],
    // GIFs in the wild are small stills and short animations rather than 12-megapixel photos.
    gif: [
      { width: 640, height: 480, count: 8 },
      { width: 1366, height: 768, count: 4 },
      { width: 1920, height: 1080, count: 4 },
      { width: 480, height: 270, count: 4, frames: 12 },
    ],
    // Members are sized so that an archive's decoded pixels stay well under the engine's
    // default 100 MiB content budget, which counts every member of one archive together.
    zip: {
      archives: 10,
      members: 20,
      jpeg: { width: 1280, height: 720, count: 1 },
      png: { width: 800, height: 600, count: 1 },
    },
    gz: [
      { width: 640, height: 480, count: 4 },
      { width: 1366, height: 768, count: 2 },
      { width: 1920, height: 1080, count: 3 },
      { width: 4000, height: 3000, count: 1 },
    ],
  },
  quick: {
    photos: [
      { width: 320, height: 240, count: 1 },
      { width: 640, height: 480, count: 1 },
      { width: 1024, height: 768, count: 1 },
    ],
    gif: [
      { width: 320, height: 240, count: 1 },
      { width: 640, height: 480, count: 1 },
      { width: 240, height: 135, count: 1, frames: 6 },
    ],
    zip: {
      archives: 2,
      members: 4,
      jpeg: { width: 640, height: 480, count: 1 },
      png: { width: 320, height: 240, count: 1 },
    },
    gz: [
      { width: 320, height: 240, count: 1 },
      { width: 640, height: 480, count: 1 },
    ],
  },
};

/** One image to generate. */
interface ImageJob {
  readonly width: number;
  readonly height: number;
  readonly frames: number;
  readonly index: number;
  readonly seed: number;
}

/**
 * Makes sure `<corpusDir>/<format>/` holds this profile's files and returns its manifest,
 * generating the folder again when its manifest is missing or stale.
 */
export async function ensureCorpus(
  corpusDir: string,
  profile: CorpusProfile,
  format: BenchFormat,
): Promise<FormatCorpus> {
  const dir = join(corpusDir, format);
  const cached = await readManifest(dir, profile, format);
  if (cached) return cached;
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const plan = PLANS[profile];
  const files =
    format === 'zip'
      ? await writeArchives(dir, format, plan.zip)
      : format === 'gz'
        ? await writeGzips(dir, format, plan.gz)
        : await writeImages(dir, format, format === 'gif' ? plan.gif : plan.photos);
  const manifest: FormatCorpus = {
    version: CORPUS_VERSION,
    profile,
    format,
    description: describe(format, plan),
    files,
  };
  await writeFile(join(dir, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  return manifest;
}

async function readManifest(
  dir: string,
  profile: CorpusProfile,
  format: BenchFormat,
): Promise<FormatCorpus | null> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8'));
  } catch {
    return null;
  }
  if (typeof parsed !== 'object' || parsed === null) return null;
  const manifest = parsed as FormatCorpus;
  const files: unknown = manifest.files;
  if (
    manifest.version !== CORPUS_VERSION ||
    manifest.profile !== profile ||
    manifest.format !== format ||
    !Array.isArray(files)
  ) {
    return null;
  }
  for (const file of manifest.files) {
    const size = await stat(join(dir, file.name)).then(
      (stats) => stats.size,
      () => -1,
    );
    if (size !== file.bytes) return null;
  }
  return manifest;
}

function expand(groups: readonly SizeGroup[], format: string): ImageJob[] {
  const jobs: ImageJob[] = [];
  for (const group of groups) {
    for (let i = 0; i < group.count; i += 1) {
      const index = jobs.length;
      jobs.push({
        width: group.width,
        height: group.height,
        frames: group.frames ?? 1,
        index,
        seed: seedOf(`${format}:${index}`),
      });
    }
  }
  return jobs;
}

async function writeImages(
  dir: string,
  format: BenchFormat,
  groups: readonly SizeGroup[],
): Promise<CorpusFile[]> {
  const files: CorpusFile[] = [];
  for (const job of expand(groups, format)) {
    const hints = hintsFor(format, job);
    const bytes = await encodeImage(format, job, hints);
    const kind = job.frames > 1 ? 'anim' : 'photo';
    const name = `${kind}-${pad(job.index)}-${job.width}x${job.height}.${format}`;
    await writeFile(join(dir, name), bytes);
    files.push({ name, bytes: bytes.length, hints });
  }
  return files;
}

function hintsFor(format: BenchFormat, job: ImageJob): EncodingHints {
  // Every fourth JPEG progressive, as many camera and web exports are; a third of the smaller
  // WebPs lossless (screenshots and graphics are what lossless WebP is used for).
  if (format === 'jpg') return { progressive: job.index % 4 === 3 };
  if (format === 'webp') return { lossless: job.index % 3 === 1 && job.width <= 1366 };
  return {};
}

/** Channels of a generated image: a quarter of the PNGs carry alpha. */
function channelsFor(format: BenchFormat, index: number): 3 | 4 {
  return format === 'png' && index % 4 === 2 ? 4 : 3;
}

async function encodeImage(
  format: BenchFormat,
  job: ImageJob,
  hints: EncodingHints,
): Promise<Buffer> {
  const channels = channelsFor(format, job.index);
  if (format === 'bmp') {
    return writeBmp24(job.width, job.height, renderPhoto(job.width, job.height, 3, job.seed));
  }
  const pixels =
    job.frames > 1
      ? renderAnimation(job, channels)
      : renderPhoto(job.width, job.height, channels, job.seed);
  const image = sharp(pixels, {
    raw: {
      width: job.width,
      height: job.height * job.frames,
      channels,
      ...(job.frames > 1 ? { pageHeight: job.height } : {}),
    },
  });
  return toFormat(image, format, job, hints).toBuffer();
}

function toFormat(image: Sharp, format: BenchFormat, job: ImageJob, hints: EncodingHints): Sharp {
  switch (format) {
    case 'jpg': {
      const jpeg = image.jpeg({
        quality: SOURCE_JPEG_QUALITY,
        progressive: hints.progressive === true,
      });
      // Half of the JPEGs carry camera EXIF (no Orientation: it would turn our output, not the
      // peer's, and the dimensions check would flag it).
      return job.index % 2 === 0
        ? jpeg.withExif({
            IFD0: { Make: 'Disarm Bench', Model: 'Synthetic Camera', Software: 'bench' },
          })
        : jpeg;
    }
    case 'png':
      return image.png();
    case 'gif':
      return job.frames > 1
        ? image.gif({
            loop: 0,
            delay: Array.from({ length: job.frames }, () => FRAME_DELAY_MS),
            effort: SOURCE_GIF_EFFORT,
          })
        : image.gif({ effort: SOURCE_GIF_EFFORT });
    case 'tif':
      return image.tiff({
        compression: job.index % 2 === 0 ? 'lzw' : 'deflate',
        predictor: 'horizontal',
      });
    case 'webp':
      return hints.lossless === true
        ? image.webp({ lossless: true })
        : image.webp({ quality: SOURCE_WEBP_QUALITY });
    case 'bmp':
    case 'zip':
    case 'gz':
      throw new TypeError(`${format} is not written through sharp`);
  }
}

async function writeArchives(
  dir: string,
  format: BenchFormat,
  plan: ArchivePlan,
): Promise<CorpusFile[]> {
  const files: CorpusFile[] = [];
  for (let archive = 0; archive < plan.archives; archive += 1) {
    const zip = new yazl.ZipFile();
    for (let member = 0; member < plan.members; member += 1) {
      const isJpeg = member % 2 === 0;
      const size = isJpeg ? plan.jpeg : plan.png;
      const seed = seedOf(`${format}:${archive}:${member}`);
      const pixels = renderPhoto(size.width, size.height, 3, seed);
      const image = sharp(pixels, { raw: { width: size.width, height: size.height, channels: 3 } });
      const bytes = await (
        isJpeg ? image.jpeg({ quality: SOURCE_JPEG_QUALITY }) : image.png()
      ).toBuffer();
      const name = `album-${pad(archive)}/${isJpeg ? 'photo' : 'scan'}-${pad(member)}.${isJpeg ? 'jpg' : 'png'}`;
      zip.addBuffer(bytes, name, { mtime: ZIP_MEMBER_MTIME, mode: 0o100644 });
    }
    zip.end();
    const bytes = await collect(zip.outputStream);
    const name = `album-${pad(archive)}.zip`;
    await writeFile(join(dir, name), bytes);
    files.push({ name, bytes: bytes.length, hints: {} });
  }
  return files;
}

async function writeGzips(
  dir: string,
  format: BenchFormat,
  groups: readonly SizeGroup[],
): Promise<CorpusFile[]> {
  const files: CorpusFile[] = [];
  for (const job of expand(groups, format)) {
    const pixels = renderPhoto(job.width, job.height, 3, job.seed);
    const png = await sharp(pixels, { raw: { width: job.width, height: job.height, channels: 3 } })
      .png()
      .toBuffer();
    // Node writes no FNAME and a zero MTIME, so the output is stable; the engine names the inner
    // file after the outer name without `.gz`.
    const bytes = gzipSync(png);
    const name = `photo-${pad(job.index)}-${job.width}x${job.height}.png.gz`;
    await writeFile(join(dir, name), bytes);
    files.push({ name, bytes: bytes.length, hints: {} });
  }
  return files;
}

async function collect(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) {
    chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  }
  return Buffer.concat(chunks);
}

/**
 * Photo-like pixels, top-down and tightly packed: per channel a base colour and low-frequency
 * waves along each axis, a few soft highlights, hard-edged shapes, luminance texture at two
 * scales (the detail that makes a JPEG of a photo a few bits per pixel), and triangular noise of
 * {@link NOISE_LEVELS}. A fourth channel is a smooth vignette alpha.
 */
function renderPhoto(width: number, height: number, channels: 3 | 4, seed: number): Uint8Array {
  const random = seededRandom(seed);
  const columns = Array.from({ length: 3 }, () => axisWave(width, random));
  const rows = Array.from({ length: 3 }, () => axisWave(height, random));
  const base = Array.from({ length: 3 }, () => 50 + random() * 120);
  const blobs = Array.from({ length: 3 }, () => ({
    x: random() * width,
    y: random() * height,
    radiusSquared: (0.05 + random() * 0.2) ** 2 * width * height,
    gain: Array.from({ length: 3 }, () => (random() - 0.3) * 90),
  }));
  const shapes = Array.from({ length: SHAPES }, () => {
    const [left, top] = [random() * width, random() * height];
    return {
      left,
      top,
      right: left + (0.05 + random() * 0.3) * width,
      bottom: top + (0.05 + random() * 0.3) * height,
      offset: Array.from({ length: 3 }, () => (random() - 0.5) * 80),
    };
  });
  const fine = createTexture(width, height, FINE_TEXTURE_CELL_PX, random);
  const coarse = createTexture(width, height, COARSE_TEXTURE_CELL_PX, random);
  const out = new Uint8ClampedArray(width * height * channels);
  const light = [0, 0, 0];
  let at = 0;
  for (let y = 0; y < height; y += 1) {
    const rowShapes = shapes.filter((shape) => y >= shape.top && y < shape.bottom);
    for (let x = 0; x < width; x += 1) {
      light[0] = 0;
      light[1] = 0;
      light[2] = 0;
      for (const blob of blobs) {
        const dx = x - blob.x;
        const dy = y - blob.y;
        const falloff = 1 / (1 + (dx * dx + dy * dy) / blob.radiusSquared);
        for (let c = 0; c < 3; c += 1) light[c] = (light[c] ?? 0) + falloff * (blob.gain[c] ?? 0);
      }
      for (const shape of rowShapes) {
        if (x < shape.left || x >= shape.right) continue;
        for (let c = 0; c < 3; c += 1) light[c] = (light[c] ?? 0) + (shape.offset[c] ?? 0);
      }
      const texture = fine.at(x, y) * FINE_TEXTURE_LEVELS + coarse.at(x, y) * COARSE_TEXTURE_LEVELS;
      for (let c = 0; c < 3; c += 1) {
        const noise = (random() + random() - 1) * NOISE_LEVELS;
        out[at + c] =
          (base[c] ?? 0) +
          (columns[c]?.[x] ?? 0) +
          (rows[c]?.[y] ?? 0) +
          (light[c] ?? 0) +
          texture +
          noise;
      }
      if (channels === 4) {
        const u = x / width - 0.5;
        const v = y / height - 0.5;
        out[at + 3] = 255 * (1.4 - 2.2 * (u * u + v * v));
      }
      at += channels;
    }
  }
  return new Uint8Array(out.buffer);
}

/** Value noise: random levels on a lattice of `cellPx`, bilinearly interpolated, in [-1, 1]. */
function createTexture(
  width: number,
  height: number,
  cellPx: number,
  random: () => number,
): { at(x: number, y: number): number } {
  const columns = Math.ceil(width / cellPx) + 2;
  const rows = Math.ceil(height / cellPx) + 2;
  const lattice = Float32Array.from({ length: columns * rows }, () => random() * 2 - 1);
  return {
    at(x, y) {
      const gx = x / cellPx;
      const gy = y / cellPx;
      const ix = Math.floor(gx);
      const iy = Math.floor(gy);
      const fx = gx - ix;
      const fy = gy - iy;
      const i = iy * columns + ix;
      const top = (lattice[i] ?? 0) * (1 - fx) + (lattice[i + 1] ?? 0) * fx;
      const bottom = (lattice[i + columns] ?? 0) * (1 - fx) + (lattice[i + columns + 1] ?? 0) * fx;
      return top * (1 - fy) + bottom * fy;
    },
  };
}

/** Two sine waves and a linear ramp along one axis. */
function axisWave(length: number, random: () => number): Float32Array {
  const wave = new Float32Array(length);
  const [f1, f2] = [0.5 + random() * 2, 2 + random() * 6];
  const [p1, p2] = [random() * Math.PI * 2, random() * Math.PI * 2];
  const [a1, a2, ramp] = [10 + random() * 30, 3 + random() * 10, (random() - 0.5) * 60];
  for (let i = 0; i < length; i += 1) {
    const t = i / length;
    wave[i] =
      a1 * Math.sin(2 * Math.PI * f1 * t + p1) +
      a2 * Math.sin(2 * Math.PI * f2 * t + p2) +
      ramp * t;
  }
  return wave;
}

/** Frames of a slow pan across one wider photo, stacked top to bottom. */
function renderAnimation(job: ImageJob, channels: 3 | 4): Uint8Array {
  const wideWidth = job.width + (job.frames - 1) * FRAME_STEP_PX;
  const wide = renderPhoto(wideWidth, job.height, channels, job.seed);
  const frameBytes = job.width * job.height * channels;
  const out = new Uint8Array(frameBytes * job.frames);
  for (let frame = 0; frame < job.frames; frame += 1) {
    for (let y = 0; y < job.height; y += 1) {
      const from = (y * wideWidth + frame * FRAME_STEP_PX) * channels;
      out.set(
        wide.subarray(from, from + job.width * channels),
        frame * frameBytes + y * job.width * channels,
      );
    }
  }
  return out;
}

/** FNV-1a of a label: each file's seed follows from its place in the plan. */
function seedOf(label: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < label.length; i += 1) {
    hash ^= label.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

function pad(value: number): string {
  return String(value).padStart(2, '0');
}

function describeGroups(groups: readonly SizeGroup[]): string {
  return groups
    .map((group) =>
      group.frames !== undefined && group.frames > 1
        ? `${group.count}× ${group.width}x${group.height} ${group.frames}-frame animation`
        : `${group.count}× ${group.width}x${group.height}`,
    )
    .join(', ');
}

function describe(format: BenchFormat, plan: ProfilePlan): string {
  const photos = describeGroups(plan.photos);
  switch (format) {
    case 'jpg':
      return `${photos}; q${SOURCE_JPEG_QUALITY} 4:2:0, every 4th progressive, half with EXIF`;
    case 'png':
      return `${photos}; 8-bit RGB, every 4th RGBA`;
    case 'gif':
      return `${describeGroups(plan.gif)}; 256-colour palettes`;
    case 'tif':
      return `${photos}; RGB, LZW and deflate alternating, horizontal predictor`;
    case 'webp':
      return `${photos}; lossy q${SOURCE_WEBP_QUALITY}, a third of those ≤1366 px wide lossless`;
    case 'bmp':
      return `${photos}; 24-bit BI_RGB, bottom-up`;
    case 'zip':
      return `${plan.zip.archives} archives × ${plan.zip.members} deflated members, alternating JPEG ${plan.zip.jpeg.width}x${plan.zip.jpeg.height} and PNG ${plan.zip.png.width}x${plan.zip.png.height}`;
    case 'gz':
      return `${describeGroups(plan.gz)}; one PNG per gzip`;
  }
}

/**
 * Test-only bridge to exiftool, the independent reader of image outputs: it lists every tag a
 * file carries, and {@link unexpectedTags} names those outside the short allowlist of structural
 * tags a rebuilt image may have.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO_ROOT = fileURLToPath(new URL('../../../../../../', import.meta.url));

/** Installs exiftool (scripts/ensure-system-deps.sh) when it is missing. */
export function ensureExiftool(): void {
  try {
    execFileSync('exiftool', ['-ver'], { stdio: 'ignore' });
  } catch {
    execFileSync('bash', [join(REPO_ROOT, 'scripts/ensure-system-deps.sh')], { stdio: 'inherit' });
  }
}

function withTempFile<T>(bytes: Uint8Array, extension: string, use: (path: string) => T): T {
  const directory = mkdtempSync(join(tmpdir(), 'disarm-exiftool-'));
  const path = join(directory, `file.${extension}`);
  try {
    writeFileSync(path, bytes);
    return use(path);
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

/** Every tag exiftool reads, as `Group1:Tag` -> value (`-G1 -a -u`: all groups, unknown too). */
export function exiftoolTags(bytes: Uint8Array, extension: string): Record<string, unknown> {
  return withTempFile(bytes, extension, (path) => {
    const json = execFileSync('exiftool', ['-j', '-G1', '-a', '-u', '-n', '-e', path], {
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    });
    const [tags] = JSON.parse(json) as Record<string, unknown>[];
    return tags ?? {};
  });
}

/** Writes tags with exiftool (`-TAG=value`, `-TAG<=file` with `{file}` as a placeholder). */
export function exiftoolWrite(
  bytes: Uint8Array,
  extension: string,
  args: readonly string[],
  files: Readonly<Record<string, Uint8Array>> = {},
): Buffer {
  return withTempFile(bytes, extension, (path) => {
    const directory = join(path, '..');
    const resolved = args.map((arg) =>
      arg.replace(/\{(\w+)\}/g, (_, name: string) => {
        const file = join(directory, `${name}.bin`);
        writeFileSync(file, files[name] ?? new Uint8Array(0));
        return file;
      }),
    );
    execFileSync('exiftool', ['-q', '-m', '-overwrite_original', ...resolved, path]);
    return readFileSync(path);
  });
}

/**
 * Tags a rebuilt image may carry, by exiftool group: what describes the pixels' layout, the
 * resolution's structural field, and (checked further by {@link unexpectedTags}) the header and
 * matrix/TRC tags of one of our own colour profiles. Group `File` is listed tag by tag because
 * exiftool reports JPEG comments there (`File:Comment`).
 */
const ALLOWED: Readonly<Record<string, ReadonlySet<string> | 'any'>> = {
  ExifTool: 'any',
  System: 'any',
  File: new Set([
    'FileType',
    'FileTypeExtension',
    'MIMEType',
    'ImageWidth',
    'ImageHeight',
    'EncodingProcess',
    'BitsPerSample',
    'ColorComponents',
    'YCbCrSubSampling',
    'ExifByteOrder',
    'BMPVersion',
    'Planes',
    'BitDepth',
    'Compression',
    'ImageLength',
    'PixelsPerMeterX',
    'PixelsPerMeterY',
    'NumColors',
    'NumImportantColors',
    'RedMask',
    'GreenMask',
    'BlueMask',
    'AlphaMask',
    'ColorSpace',
    'RenderingIntent',
    'ProfileDataOffset',
    'ProfileSize',
  ]),
  JFIF: new Set(['JFIFVersion', 'ResolutionUnit', 'XResolution', 'YResolution']),
  Adobe: new Set(['DCTEncodeVersion', 'APP14Flags0', 'APP14Flags1', 'ColorTransform']),
  PNG: new Set([
    'ImageWidth',
    'ImageHeight',
    'BitDepth',
    'ColorType',
    'Compression',
    'Filter',
    'Interlace',
    'ProfileName',
    'Palette',
    'Transparency',
    'SignificantBits',
    'Gamma',
    'SRGBRendering',
    'AnimationFrames',
    'AnimationPlays',
  ]),
  'PNG-pHYs': new Set(['PixelsPerUnitX', 'PixelsPerUnitY', 'PixelUnits']),
  GIF: new Set([
    'GIFVersion',
    'ImageWidth',
    'ImageHeight',
    'HasColorMap',
    'ColorResolutionDepth',
    'BitsPerPixel',
    'BackgroundColor',
    'TransparentColor',
    'AnimationIterations',
    'FrameCount',
    'Duration',
    'Interlaced',
  ]),
  RIFF: new Set([
    'VP8Version',
    'ImageWidth',
    'ImageHeight',
    'HorizontalScale',
    'VerticalScale',
    'WebP_Flags',
    'AlphaPreprocessing',
    'AlphaFiltering',
    'AlphaCompression',
    'BackgroundColor',
    'AnimationLoopCount',
    'Duration',
    'FrameCount',
  ]),
  'ICC-header': 'any',
  ICC_Profile: new Set([
    'ProfileDescription',
    'ProfileCopyright',
    'MediaWhitePoint',
    'RedMatrixColumn',
    'GreenMatrixColumn',
    'BlueMatrixColumn',
    'RedTRC',
    'GreenTRC',
    'BlueTRC',
    'GrayTRC',
  ]),
  Composite: 'any',
};

/** TIFF IFD tags a rebuilt TIFF may carry (exiftool names; strips of JPEG-in-TIFF are "Preview"). */
const TIFF_ALLOWED = new Set([
  'SubfileType',
  'ImageWidth',
  'ImageHeight',
  'BitsPerSample',
  'Compression',
  'PhotometricInterpretation',
  'FillOrder',
  'StripOffsets',
  'Orientation',
  'SamplesPerPixel',
  'RowsPerStrip',
  'StripByteCounts',
  'XResolution',
  'YResolution',
  'PlanarConfiguration',
  'ResolutionUnit',
  'PageNumber',
  'Predictor',
  'ColorMap',
  'TileWidth',
  'TileLength',
  'TileOffsets',
  'TileByteCounts',
  'ExtraSamples',
  'SampleFormat',
  'JPEGTables',
  'YCbCrCoefficients',
  'YCbCrSubSampling',
  'YCbCrPositioning',
  'ReferenceBlackWhite',
  'PreviewImageStart',
  'PreviewImageLength',
  'PreviewImage',
]);

/**
 * The `Group:Tag` names outside the allowlist, plus a profile description that is not one of ours
 * (our profiles' descriptions end in "(disarm)").
 */
export function unexpectedTags(tags: Record<string, unknown>): string[] {
  const unexpected: string[] = [];
  for (const [key, value] of Object.entries(tags)) {
    if (key === 'SourceFile') continue;
    const [group = '', name = ''] = key.split(':');
    const allowed = /^IFD\d+$/.test(group) ? TIFF_ALLOWED : ALLOWED[group];
    if (allowed === undefined || (allowed !== 'any' && !allowed.has(name))) {
      unexpected.push(key);
    } else if (key === 'ICC_Profile:ProfileDescription' && !String(value).endsWith('(disarm)')) {
      unexpected.push(`${key}=${String(value)}`);
    }
  }
  return unexpected;
}

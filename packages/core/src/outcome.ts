import type { Finding } from './findings.ts';
import type { RejectionReason } from './reasons.ts';

/** What was done to a returned file: always `rebuilt`; `converted` when its format changed. */
export type Modification = 'rebuilt' | 'converted';

/** The file was rebuilt; `bytes` is the safe copy. */
export interface CleanedOutcome {
  readonly status: 'cleaned';
  /** The rebuilt file. */
  readonly bytes: Uint8Array;
  /** Name to return it under: the submitted name, with the new extension when converted. */
  readonly fileName: string;
  /** Extension of the returned format, e.g. `pdf` for a converted `html`. */
  readonly format: string;
  /** IANA media type of the returned format. */
  readonly mediaType: string;
  readonly modifications: readonly Modification[];
  /** What the rebuild removed, by kind (empty when nothing active was found). */
  readonly findings: readonly Finding[];
}

/**
 * The file was rebuilt and written to `outputPath` (the `outputPath` option of `disarm()`); it
 * was never held whole in memory when the family rebuilds from disk (zip, PDF).
 */
export interface CleanedFileOutcome extends Omit<CleanedOutcome, 'bytes'> {
  /** Where the rebuilt file was written: the `outputPath` option. */
  readonly path: string;
  /** Size of the written file. */
  readonly sizeBytes: number;
}

/** The file's own properties stop it; a final answer, not a fault. */
export interface RejectedOutcome {
  readonly status: 'rejected';
  readonly reason: RejectionReason;
  /** Human explanation, safe to show to the submitter. */
  readonly detail: string;
  /** Names of the threats found; only with `threat_detected`. */
  readonly threatNames?: readonly string[];
}

/** The result of `disarm()`: a rebuilt file or a rejection. Faults are thrown instead. */
export type Outcome = CleanedOutcome | RejectedOutcome;

/** The result of `disarm()` with `outputPath`: a rebuilt file on disk or a rejection. */
export type FileOutcome = CleanedFileOutcome | RejectedOutcome;

const MEDIA_TYPES: Readonly<Record<string, string>> = {
  doc: 'application/msword',
  dot: 'application/msword',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  docm: 'application/vnd.ms-word.document.macroEnabled.12',
  dotx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.template',
  dotm: 'application/vnd.ms-word.template.macroEnabled.12',
  xls: 'application/vnd.ms-excel',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  xlsb: 'application/vnd.ms-excel.sheet.binary.macroEnabled.12',
  xlsm: 'application/vnd.ms-excel.sheet.macroEnabled.12',
  xltx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.template',
  xltm: 'application/vnd.ms-excel.template.macroEnabled.12',
  xlam: 'application/vnd.ms-excel.addin.macroEnabled.12',
  ppt: 'application/vnd.ms-powerpoint',
  pps: 'application/vnd.ms-powerpoint',
  pot: 'application/vnd.ms-powerpoint',
  ppa: 'application/vnd.ms-powerpoint',
  pptx: 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
  pptm: 'application/vnd.ms-powerpoint.presentation.macroEnabled.12',
  potx: 'application/vnd.openxmlformats-officedocument.presentationml.template',
  potm: 'application/vnd.ms-powerpoint.template.macroEnabled.12',
  ppam: 'application/vnd.ms-powerpoint.addin.macroEnabled.12',
  ppsx: 'application/vnd.openxmlformats-officedocument.presentationml.slideshow',
  ppsm: 'application/vnd.ms-powerpoint.slideshow.macroEnabled.12',
  pdf: 'application/pdf',
  fdf: 'application/vnd.fdf',
  rtf: 'application/rtf',
  odt: 'application/vnd.oasis.opendocument.text',
  ods: 'application/vnd.oasis.opendocument.spreadsheet',
  odp: 'application/vnd.oasis.opendocument.presentation',
  svg: 'image/svg+xml',
  html: 'text/html',
  htm: 'text/html',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  png: 'image/png',
  gif: 'image/gif',
  bmp: 'image/bmp',
  tif: 'image/tiff',
  tiff: 'image/tiff',
  webp: 'image/webp',
  zip: 'application/zip',
  gz: 'application/gzip',
};

/** The media type of a file extension; `application/octet-stream` when unknown. */
export function mediaTypeOf(extension: string): string {
  return MEDIA_TYPES[extension.toLowerCase()] ?? 'application/octet-stream';
}

/**
 * The allowlist: every extension the v1 API supports (README "What it handles"), with the handler
 * family that rebuilds it and the format it is returned in (the table's "returned as").
 * One row per extension; adding a format is adding a row here and a handler folder.
 */

/** A handler family: one folder under `handlers/`, one rebuild implementation. */
export type FormatFamily = 'pdf' | 'ooxml' | 'odf' | 'cfb' | 'rtf' | 'image' | 'markup' | 'archive';

/** A supported extension, lower-case, without the dot. */
export type SupportedExtension =
  | 'doc'
  | 'dot'
  | 'docx'
  | 'docm'
  | 'dotx'
  | 'dotm'
  | 'xls'
  | 'xlsx'
  | 'xlsb'
  | 'xlsm'
  | 'xltx'
  | 'xltm'
  | 'xlam'
  | 'ppt'
  | 'pps'
  | 'pot'
  | 'ppa'
  | 'pptx'
  | 'pptm'
  | 'potx'
  | 'potm'
  | 'ppam'
  | 'ppsx'
  | 'ppsm'
  | 'pdf'
  | 'fdf'
  | 'rtf'
  | 'odt'
  | 'ods'
  | 'odp'
  | 'svg'
  | 'html'
  | 'htm'
  | 'jpg'
  | 'jpeg'
  | 'png'
  | 'gif'
  | 'bmp'
  | 'tif'
  | 'tiff'
  | 'webp'
  | 'zip'
  | 'gz';

/**
 * What the bytes of a supported extension must be. Detection checks the bytes against this, so
 * a `.docx` holding a spreadsheet or a `.png` holding a JPEG is `invalid_file`.
 */
export type ContentKind =
  | 'word-binary'
  | 'excel-binary'
  | 'powerpoint-binary'
  | 'word-ooxml'
  | 'excel-ooxml'
  | 'excel-binary-ooxml'
  | 'powerpoint-ooxml'
  | 'pdf'
  | 'fdf'
  | 'rtf'
  | 'odf-text'
  | 'odf-spreadsheet'
  | 'odf-presentation'
  | 'svg'
  | 'html'
  | 'jpeg'
  | 'png'
  | 'gif'
  | 'bmp'
  | 'tiff'
  | 'webp'
  | 'zip'
  | 'gzip';

/** One row of the allowlist. */
export interface FormatRow {
  readonly extension: SupportedExtension;
  readonly family: FormatFamily;
  readonly kind: ContentKind;
  /** Extension of the returned file; differs from `extension` when the file is converted. */
  readonly outputExtension: string;
}

function row(
  extension: SupportedExtension,
  family: FormatFamily,
  kind: ContentKind,
  outputExtension: string = extension,
): FormatRow {
  return { extension, family, kind, outputExtension };
}

/** The allowlist, grouped by application as the v1 API lists it. */
export const FORMATS: readonly FormatRow[] = [
  row('doc', 'cfb', 'word-binary'),
  row('dot', 'cfb', 'word-binary'),
  row('docx', 'ooxml', 'word-ooxml'),
  row('docm', 'ooxml', 'word-ooxml'),
  row('dotx', 'ooxml', 'word-ooxml'),
  row('dotm', 'ooxml', 'word-ooxml'),
  row('xls', 'cfb', 'excel-binary'),
  row('xlsx', 'ooxml', 'excel-ooxml'),
  row('xlsb', 'ooxml', 'excel-binary-ooxml'),
  row('xlsm', 'ooxml', 'excel-ooxml'),
  row('xltx', 'ooxml', 'excel-ooxml'),
  row('xltm', 'ooxml', 'excel-ooxml'),
  row('xlam', 'ooxml', 'excel-ooxml'),
  row('ppt', 'cfb', 'powerpoint-binary'),
  row('pps', 'cfb', 'powerpoint-binary'),
  row('pot', 'cfb', 'powerpoint-binary'),
  row('ppa', 'cfb', 'powerpoint-binary'),
  row('pptx', 'ooxml', 'powerpoint-ooxml'),
  row('pptm', 'ooxml', 'powerpoint-ooxml'),
  row('potx', 'ooxml', 'powerpoint-ooxml'),
  row('potm', 'ooxml', 'powerpoint-ooxml'),
  row('ppam', 'ooxml', 'powerpoint-ooxml'),
  row('ppsx', 'ooxml', 'powerpoint-ooxml'),
  row('ppsm', 'ooxml', 'powerpoint-ooxml'),
  row('pdf', 'pdf', 'pdf'),
  row('fdf', 'pdf', 'fdf'),
  row('rtf', 'rtf', 'rtf'),
  row('odt', 'odf', 'odf-text'),
  row('ods', 'odf', 'odf-spreadsheet', 'pdf'),
  row('odp', 'odf', 'odf-presentation', 'pdf'),
  row('svg', 'markup', 'svg', 'pdf'),
  row('html', 'markup', 'html', 'pdf'),
  row('htm', 'markup', 'html', 'pdf'),
  row('jpg', 'image', 'jpeg'),
  row('jpeg', 'image', 'jpeg'),
  row('png', 'image', 'png'),
  row('gif', 'image', 'gif'),
  row('bmp', 'image', 'bmp'),
  row('tif', 'image', 'tiff'),
  row('tiff', 'image', 'tiff'),
  row('webp', 'image', 'webp'),
  row('zip', 'archive', 'zip'),
  row('gz', 'archive', 'gzip', 'zip'),
];

const BY_EXTENSION: ReadonlyMap<string, FormatRow> = new Map(
  FORMATS.map((format) => [format.extension, format]),
);

/** The file name's extension, lower-cased, without the dot; `''` when there is none. */
export function extensionOf(fileName: string): string {
  const base = fileName.slice(Math.max(fileName.lastIndexOf('/'), fileName.lastIndexOf('\\')) + 1);
  const dot = base.lastIndexOf('.');
  return dot <= 0 ? '' : base.slice(dot + 1).toLowerCase();
}

/** The allowlist row for a file name (case-insensitive), or `undefined` when not supported. */
export function formatForFileName(fileName: string): FormatRow | undefined {
  return BY_EXTENSION.get(extensionOf(fileName));
}

/** True when the file name's extension is on the allowlist. */
export function isSupportedFileName(fileName: string): boolean {
  return formatForFileName(fileName) !== undefined;
}

/** The name a rebuilt file is returned under: same stem, the output format's extension. */
export function outputFileName(fileName: string, format: FormatRow): string {
  const ext = extensionOf(fileName);
  if (ext === format.outputExtension) return fileName;
  return `${fileName.slice(0, fileName.length - ext.length)}${format.outputExtension}`;
}

/** The XML namespaces of the OOXML parts a rebuild reads and writes, and attributes in them. */
import type { XmlElementNode } from '../../_internal/xml-rewrite.ts';

/** Namespace URIs by the prefix Office writes them with (ECMA-376 Part 1 and [MS-XLSX]). */
export const NS = {
  w: 'http://schemas.openxmlformats.org/wordprocessingml/2006/main',
  r: 'http://schemas.openxmlformats.org/officeDocument/2006/relationships',
  s: 'http://schemas.openxmlformats.org/spreadsheetml/2006/main',
  p: 'http://schemas.openxmlformats.org/presentationml/2006/main',
  a: 'http://schemas.openxmlformats.org/drawingml/2006/main',
  o: 'urn:schemas-microsoft-com:office:office',
  x: 'urn:schemas-microsoft-com:office:excel',
  cp: 'http://schemas.openxmlformats.org/package/2006/metadata/core-properties',
  dc: 'http://purl.org/dc/elements/1.1/',
  dcterms: 'http://purl.org/dc/terms/',
  ep: 'http://schemas.openxmlformats.org/officeDocument/2006/extended-properties',
  vt: 'http://schemas.openxmlformats.org/officeDocument/2006/docPropsVTypes',
  /** [MS-XLSX] 2.2.4: Excel's own elements, `xm:f` formulas in x14 extensions among them. */
  xm: 'http://schemas.microsoft.com/office/excel/2006/main',
  /** [MS-XLSX] 2.6: the Excel 2010 extensions (x14 conditional formats, data validation). */
  x14: 'http://schemas.microsoft.com/office/spreadsheetml/2009/9/main',
  /** [MS-XLSX] 2.6: the Excel 2013 extensions (timelines, table slicers, data model caches). */
  x15: 'http://schemas.microsoft.com/office/spreadsheetml/2010/11/main',
  /** [MS-XLSX] 2.6.x: `x15ac:absPath`, the folder the workbook was last saved in. */
  x15ac: 'http://schemas.microsoft.com/office/spreadsheetml/2010/11/ac',
  /** ECMA-376 Part 3: markup compatibility (`mc:AlternateContent`). */
  mc: 'http://schemas.openxmlformats.org/markup-compatibility/2006',
} as const;

/** The value of attribute `{uri}localName`. */
export function attribute(
  element: XmlElementNode,
  uri: string,
  localName: string,
): string | undefined {
  return element.attributes.find((a) => a.uri === uri && a.local === localName)?.value;
}

import { buildEmf, buildImage } from '@disarm/fixtures';
import { describe, expect, it } from 'vitest';

import { PACKAGE_TIME } from '../office/package-zip.ts';
import { writeZip } from '../../_internal/zip-writer.ts';
import { FindingTally } from '../../findings.ts';
import { formatForFileName } from '../../formats.ts';
import { DEFAULT_LIMITS } from '../../limits.ts';
import { engineContext } from '../../test-support.ts';
import { rebuildMetafile } from '../image/metafile/metafile.ts';
import type { DetectedFile } from '../types.ts';
import { verifyOdf } from './verify.ts';

const NS =
  'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" xmlns:xlink="http://www.w3.org/1999/xlink" xmlns:chart="urn:oasis:names:tc:opendocument:xmlns:chart:1.0"';
const CHART_TYPE = 'application/vnd.oasis.opendocument.chart';

/** A written package as the rebuild writes one with a chart object, with what `change` alters. */
async function written(change: {
  anchor?: string;
  chartLink?: string;
  folderType?: string;
  chartContent?: boolean;
  /** A replacement image `ObjectReplacements/Object 3` in a frame of its own, these bytes. */
  replacement?: Uint8Array;
}): Promise<Uint8Array> {
  const anchor = change.anchor ?? './Object 2';
  const replacementFrame =
    change.replacement === undefined
      ? ''
      : '<draw:frame><draw:image xlink:href="./ObjectReplacements/Object 3"/></draw:frame>';
  const content = `<?xml version="1.0" encoding="UTF-8"?><office:document-content ${NS}><office:body><office:text><text:p><draw:frame><draw:object xlink:href="${anchor}"/></draw:frame>${replacementFrame}</text:p></office:text></office:body></office:document-content>`;
  const chart = `<?xml version="1.0" encoding="UTF-8"?><office:document-content ${NS}><office:body><office:chart><chart:chart xlink:href="${change.chartLink ?? '.'}"/></office:chart></office:body></office:document-content>`;
  const members: [string, string][] = [['content.xml', content]];
  if (change.chartContent !== false) members.push(['Object 2/content.xml', chart]);
  const listed: [string, string][] = [
    ...members.map(([path]): [string, string] => [path, 'text/xml']),
    ['Object 2/', change.folderType ?? CHART_TYPE],
    ...(change.replacement === undefined
      ? []
      : [['ObjectReplacements/Object 3', 'image/x-emf'] as [string, string]]),
  ];
  const manifest =
    '<?xml version="1.0" encoding="UTF-8"?><manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.3"><manifest:file-entry manifest:full-path="/" manifest:media-type="application/vnd.oasis.opendocument.text"/>' +
    listed
      .map(
        ([path, type]) =>
          `<manifest:file-entry manifest:full-path="${path}" manifest:media-type="${type}"/>`,
      )
      .join('') +
    '</manifest:manifest>';
  // Written by the engine's own writer, as the rebuild writes (mimetype stored, no extra field).
  const entry = (path: string, data: string | Uint8Array, compress = true) => ({
    path,
    bytes: typeof data === 'string' ? new TextEncoder().encode(data) : data,
    modifiedAt: PACKAGE_TIME,
    compress,
  });
  return writeZip([
    entry('mimetype', 'application/vnd.oasis.opendocument.text', false),
    ...members.map(([path, text]) => entry(path, text)),
    ...(change.replacement === undefined
      ? []
      : [entry('ObjectReplacements/Object 3', change.replacement)]),
    entry('META-INF/manifest.xml', manifest),
  ]);
}

const ODT: DetectedFile = (() => {
  const format = formatForFileName('a.odt');
  if (!format) throw new Error('odt is allowlisted');
  return { bytes: new Uint8Array(), fileName: 'a.odt', format };
})();

const verify = async (bytes: Uint8Array): Promise<void> => {
  await verifyOdf({ bytes, findings: [] }, ODT, engineContext());
};

describe('ODF verify before release: chart objects', () => {
  it('passes a chart object the manifest names, anchored in the text', async () => {
    await expect(verify(await written({}))).resolves.toBeUndefined();
  });

  it.each([
    [
      'an anchor naming an object that is not there',
      { anchor: './Object 3' },
      'odf.active-content',
    ],
    [
      'an anchor outside the package',
      { anchor: 'https://attacker.example/o' },
      'odf.active-content',
    ],
    ['an anchor naming a stream, not an object', { anchor: './content.xml' }, 'odf.active-content'],
    ['a chart linking anything but itself', { chartLink: '../content.xml' }, 'odf.active-content'],
    [
      'an object folder listed as another type',
      { folderType: 'application/vnd.oasis.opendocument.text' },
      'odf.manifest',
    ],
    ['a chart folder without its content', { chartContent: false }, 'odf.manifest'],
  ] as const)('fails %s', async (_label, change, check) => {
    await expect(verify(await written(change))).rejects.toMatchObject({ check });
  });
});

describe('ODF verify before release: replacement images', () => {
  const rebuiltEmf = rebuildMetafile(buildEmf(), 'emf', DEFAULT_LIMITS, new FindingTally());

  it('passes a rebuilt EMF replacement image', async () => {
    await expect(verify(await written({ replacement: rebuiltEmf }))).resolves.toBeUndefined();
  });

  it.each([
    [
      "a replacement in LibreOffice's own metafile format (SVM)",
      () => Promise.resolve(new TextEncoder().encode('VCLMTF\u0001\u0000records')),
      'odf.part-allowlist',
    ],
    [
      'an EMF as written by Office, with its description and EMF+ comments',
      () => Promise.resolve(buildEmf({ emfPlus: 'dual', description: 'Word\0Object\0\0' })),
      'odf.metafile',
    ],
    [
      'an EMF cut short of its end record',
      () => Promise.resolve(rebuiltEmf.subarray(0, rebuiltEmf.length - 20)),
      'odf.metafile',
    ],
    [
      'a PNG carrying camera EXIF',
      () => buildImage('png', { width: 8, height: 8, exif: { Artist: 'A. Author' } }),
      'image.no-metadata',
    ],
  ] as const)('fails %s', async (_label, make, check) => {
    const replacement = new Uint8Array(await make());
    await expect(verify(await written({ replacement }))).rejects.toMatchObject({ check });
  });
});

import { describe, expect, it } from 'vitest';

import { PACKAGE_TIME } from '../../_internal/package-zip.ts';
import { writeZip } from '../../_internal/zip-writer.ts';
import { engineContext } from '../../test-support.ts';
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
}): Promise<Uint8Array> {
  const anchor = change.anchor ?? './Object 2';
  const content = `<?xml version="1.0" encoding="UTF-8"?><office:document-content ${NS}><office:body><office:text><text:p><draw:frame><draw:object xlink:href="${anchor}"/></draw:frame></text:p></office:text></office:body></office:document-content>`;
  const chart = `<?xml version="1.0" encoding="UTF-8"?><office:document-content ${NS}><office:body><office:chart><chart:chart xlink:href="${change.chartLink ?? '.'}"/></office:chart></office:body></office:document-content>`;
  const members: [string, string][] = [['content.xml', content]];
  if (change.chartContent !== false) members.push(['Object 2/content.xml', chart]);
  const listed: [string, string][] = [
    ...members.map(([path]): [string, string] => [path, 'text/xml']),
    ['Object 2/', change.folderType ?? CHART_TYPE],
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
  const entry = (path: string, text: string, compress = true) => ({
    path,
    bytes: new TextEncoder().encode(text),
    modifiedAt: PACKAGE_TIME,
    compress,
  });
  return writeZip([
    entry('mimetype', 'application/vnd.oasis.opendocument.text', false),
    ...members.map(([path, text]) => entry(path, text)),
    entry('META-INF/manifest.xml', manifest),
  ]);
}

const verify = async (bytes: Uint8Array): Promise<void> => {
  await verifyOdf({ bytes, findings: [] }, {} as DetectedFile, engineContext());
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

import {
  buildOpcPackage,
  buildPdfWithAttachment,
  buildTextPdf,
  buildZip,
  EICAR_TEST_FILE,
  OOXML_MAIN_TYPES,
  RELATIONSHIP_TYPES,
} from '@disarm/fixtures';
import { describe, expect, it } from 'vitest';

import { disarm } from '../disarm.ts';
import { EICAR_THREAT_NAME } from './eicar.ts';
import type { Scanner } from './scanner.ts';

const W_NS = 'http://schemas.openxmlformats.org/wordprocessingml/2006/main';

/** A Word document whose main part embeds `data` as a package object (`word/embeddings/…`). */
function wordWithEmbeddedPackage(name: string, data: Uint8Array): Promise<Buffer> {
  return buildOpcPackage(
    [
      {
        name: 'word/document.xml',
        contentType: OOXML_MAIN_TYPES.docx,
        data: `<w:document xmlns:w="${W_NS}"><w:body><w:p><w:r><w:t>Hi</w:t></w:r></w:p></w:body></w:document>`,
        relationships: [
          {
            id: 'rIdPkg',
            type: 'http://schemas.openxmlformats.org/officeDocument/2006/relationships/package',
            target: `embeddings/${name}`,
          },
        ],
      },
      {
        name: `word/embeddings/${name}`,
        contentType: 'application/vnd.openxmlformats-officedocument.package',
        data,
      },
    ],
    [{ id: 'rId1', type: RELATIONSHIP_TYPES.officeDocument, target: 'word/document.xml' }],
  );
}

describe('every archive member and embedded object is scanned before it is dropped or rebuilt', () => {
  it('names the member of a zip a threat was found in', async () => {
    const zip = await buildZip([
      { name: 'docs/readme.png', data: EICAR_TEST_FILE },
      { name: 'docs/eicar.com', data: EICAR_TEST_FILE },
    ]);
    expect(await disarm({ bytes: zip, fileName: 'bundle.zip' })).toEqual({
      status: 'rejected',
      reason: 'threat_detected',
      detail: `the archive contains ${EICAR_THREAT_NAME} in member "docs/readme.png"`,
      threatNames: [EICAR_THREAT_NAME],
    });
  });

  it('scans an object embedded in a Word document and names its part', async () => {
    const docx = await wordWithEmbeddedPackage('payload.com', EICAR_TEST_FILE);
    expect(await disarm({ bytes: docx, fileName: 'letter.docx' })).toEqual({
      status: 'rejected',
      reason: 'threat_detected',
      detail: `the file contains ${EICAR_THREAT_NAME} in part "word/embeddings/payload.com"`,
      threatNames: [EICAR_THREAT_NAME],
    });
  });

  it('scans an OpenDocument object folder and names its part', async () => {
    const odt = await buildZip([
      { name: 'mimetype', data: 'application/vnd.oasis.opendocument.text', compress: false },
      {
        name: 'content.xml',
        data: '<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"/>',
      },
      { name: 'Object 1/payload.bin', data: EICAR_TEST_FILE },
    ]);
    expect(await disarm({ bytes: odt, fileName: 'notes.odt' })).toMatchObject({
      reason: 'threat_detected',
      detail: `the file contains ${EICAR_THREAT_NAME} in part "Object 1/payload.bin"`,
    });
  });

  it('names the path to a threat inside a document inside an archive', async () => {
    const docx = await wordWithEmbeddedPackage('payload.com', EICAR_TEST_FILE);
    const zip = await buildZip([{ name: 'in/letter.docx', data: docx }]);
    expect(await disarm({ bytes: zip, fileName: 'bundle.zip' })).toMatchObject({
      reason: 'threat_detected',
      detail: `the archive contains ${EICAR_THREAT_NAME} in member "in/letter.docx" > part "word/embeddings/payload.com"`,
    });
  });

  it('scans a PDF attachment, decoded, and names it', async () => {
    const pdf = buildPdfWithAttachment('invoice.com', EICAR_TEST_FILE);
    expect(await disarm({ bytes: pdf, fileName: 'invoice.pdf' })).toEqual({
      status: 'rejected',
      reason: 'threat_detected',
      detail: `the file contains ${EICAR_THREAT_NAME} in attachment "invoice.com"`,
      threatNames: [EICAR_THREAT_NAME],
    });
  });

  it('scans the file of a file attachment annotation, and through an attached archive', async () => {
    const zip = await buildZip([{ name: 'eicar.com', data: EICAR_TEST_FILE }]);
    const pdf = buildTextPdf({
      page: '/Annots [20 0 R]',
      objects: [
        {
          num: 20,
          // The file specification is direct, inside the annotation (ISO 32000-1 12.5.6.15).
          body: '<< /Type /Annot /Subtype /FileAttachment /Rect [0 0 20 20] /FS << /Type /Filespec /F (parts.zip) /EF << /F 21 0 R >> >> >>',
        },
        { num: 21, body: '<< /Type /EmbeddedFile >>', stream: zip },
      ],
    });
    expect(await disarm({ bytes: pdf, fileName: 'report.pdf' })).toMatchObject({
      reason: 'threat_detected',
      detail: `the file contains ${EICAR_THREAT_NAME} in attachment "parts.zip"`,
      threatNames: [EICAR_THREAT_NAME],
    });
  });

  it('hands the scanners each attachment decoded, and still drops a clean one', async () => {
    const seen: { fileName: string; text: string }[] = [];
    const recorder: Scanner = {
      name: 'recorder',
      scan(bytes, context) {
        seen.push({ fileName: context.fileName, text: Buffer.from(bytes).toString('latin1') });
        return Promise.resolve([]);
      },
    };
    const pdf = buildPdfWithAttachment('notes.txt', Buffer.from('just notes'));
    const outcome = await disarm({ bytes: pdf, fileName: 'a.pdf' }, { scanners: [recorder] });
    expect(outcome).toMatchObject({
      status: 'cleaned',
      findings: expect.arrayContaining([{ kind: 'pdf-embedded-file', count: 1 }]) as unknown,
    });
    expect(seen).toContainEqual({ fileName: 'notes.txt', text: 'just notes' });
  });
});

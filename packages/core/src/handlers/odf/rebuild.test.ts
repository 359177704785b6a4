import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import {
  buildEmf,
  buildImage,
  buildOdf,
  buildOdt,
  buildWmf,
  buildZip,
  EICAR_TEST_FILE,
  withZip64End,
} from '@disarm/fixtures';
import type { ZipFixtureEntry } from '@disarm/fixtures';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { disarm } from '../../disarm.ts';
import { openZip, readMember } from '../../_internal/zip-reader.ts';
import { encodeBmp } from '../image/bmp/encode.ts';
import { cleaned, findingsOf } from '../../test-support.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'odf-test-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The package as Info-ZIP sees it: members in order with their method, and all their text. */
/** Tests and lists the package; `text` is every member's content, or only these members'. */
async function unzipped(
  bytes: Uint8Array,
  ...members: string[]
): Promise<{ listing: string[]; text: string }> {
  const path = join(dir, `${Math.random().toString(36).slice(2)}.odt`);
  await writeFile(path, bytes);
  execFileSync('unzip', ['-tqq', path]);
  // zipinfo -v would be verbose; "-Z -l" prints the method column ("stor"/"defN") per member.
  const listing = execFileSync('unzip', ['-Z', '-l', path], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .slice(2, -1);
  const text = execFileSync('unzip', ['-p', path, ...members], { encoding: 'latin1' });
  return { listing, text };
}

/** The package with the text of each XML member passed through `edit`, members kept in order. */
async function rezipped(bytes: Uint8Array, edit: (text: string) => string): Promise<Buffer> {
  const listing = await openZip(bytes, 100);
  const entries: ZipFixtureEntry[] = [];
  for (const member of listing.members) {
    const data = await readMember(listing, member, 1 << 24, member.name);
    entries.push({
      name: member.name,
      data: member.name.endsWith('.xml') ? edit(Buffer.from(data).toString('utf8')) : data,
      compress: member.name !== 'mimetype',
    });
  }
  listing.file.close();
  return buildZip(entries);
}

describe('ODT rebuild', () => {
  it('rebuilds a clean text with nothing to report: mimetype first and stored, manifest rebuilt', async () => {
    const input = await buildOdt({
      texts: ['Quarterly numbers'],
      hyperlinks: ['https://example.com/'],
    });
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'a.odt' }));
    expect(outcome.findings).toEqual([]);
    const { listing, text } = await unzipped(outcome.bytes);
    expect(listing[0]).toMatch(/ stor .* mimetype$/);
    expect(listing.map((line) => line.split(/\s+/).at(-1))).toEqual([
      'mimetype',
      'content.xml',
      'meta.xml',
      'META-INF/manifest.xml',
    ]);
    expect(text).toContain('Quarterly numbers');
    expect(text).toContain('https://example.com/');
    expect(text).toContain('<dc:title>Quarterly report</dc:title>');
  });

  it('removes the Word fields LibreOffice keeps as fieldmarks when they are active, keeping their text', async () => {
    const input = await buildOdt({ texts: ['Fields'], fieldmarks: true });
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'a.odt' }));
    // DDEAUTO (its start, separator and end, in two paragraphs) and INCLUDETEXT go; the PAGEREF
    // nested in INCLUDETEXT's result and the checkbox stay.
    expect(findingsOf(outcome)).toEqual({ 'dde-link': 1, 'external-relationship': 1 });
    const { text } = await unzipped(outcome.bytes);
    expect(text).not.toMatch(/DDEAUTO|INCLUDETEXT|attacker|__Fieldmark__1"|__Fieldmark__2"/);
    expect(text).toContain('<text:p>first line of the result</text:p>');
    expect(text).toContain('<text:p>second line of the result after the field</text:p>');
    expect(text).toMatch(
      /<text:p>included, page <field:fieldmark-start text:name="__Fieldmark__3"[^>]*>.*PAGEREF _Toc1 .*<field:fieldmark-separator\/>7<field:fieldmark-end\/><\/text:p>/,
    );
    expect(text).toContain('field:name="Checkbox_Checked" field:value="true"');
    // The fieldmarks left balance: one start, one separator, one end.
    expect(text.match(/<field:fieldmark-(start|separator|end)\b/g)).toEqual([
      '<field:fieldmark-start',
      '<field:fieldmark-separator',
      '<field:fieldmark-end',
    ]);
  });

  it('cuts XForms data loaded from or sent to a URL, and mail-merge fields, keeping their text', async () => {
    const input = await buildOdt({ texts: ['Form'], forms: true });
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'a.odt' }));
    // The instance's src and the submission; the data-source field.
    expect(findingsOf(outcome)).toEqual({ 'external-relationship': 2, 'data-connection': 1 });
    const { text } = await unzipped(outcome.bytes);
    expect(text).not.toMatch(/attacker|submission|Addresses|database-display/);
    expect(text).toContain(
      '<xforms:instance xforms:id="instance"><data xmlns=""/></xforms:instance>',
    );
    expect(text).toContain('<text:p>Dear Alice,</text:p>');
  });

  it('keeps a chart object, rewritten, without its replacement image', async () => {
    const input = await buildOdt({ texts: ['Chart below'], chart: true });
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'a.odt' }));
    // The macro link in the chart's title; the chart itself is not a finding.
    expect(findingsOf(outcome)).toEqual({ 'odf-macro': 1 });
    const { listing, text } = await unzipped(outcome.bytes);
    // Names after the time column: "Object 2/…" holds a space.
    expect(listing.map((line) => line.replace(/^.*? \d\d:\d\d /, ''))).toEqual([
      'mimetype',
      'content.xml',
      'meta.xml',
      'Object 2/content.xml',
      'Object 2/styles.xml',
      'META-INF/manifest.xml',
    ]);
    expect(text).toContain('<draw:object xlink:href="./Object 2"');
    expect(text).not.toContain('ObjectReplacements');
    expect(text).not.toContain('vnd.sun.star.script');
    expect(text).toContain('<chart:title><text:p>Quarterly sales</text:p></chart:title>');
    expect(text).toContain('xlink:href="."');
    expect(text).toContain(
      '<manifest:file-entry manifest:full-path="Object 2/" manifest:media-type="application/vnd.oasis.opendocument.chart"/>',
    );
  });

  it('rebuilds settings.xml from the layout switches alone', async () => {
    const input = await buildOdt({ texts: ['Settings'], settings: true, payload: 'PAYLOAD' });
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'a.odt' }));
    expect(outcome.findings).toEqual([]);
    const { listing } = await unzipped(outcome.bytes);
    expect(listing.map((line) => line.split(/\s+/).at(-1))).toContain('settings.xml');
    const path = join(dir, 'settings.odt');
    await writeFile(path, outcome.bytes);
    const settings = execFileSync('unzip', ['-p', path, 'settings.xml'], { encoding: 'utf8' });
    const items = [...settings.matchAll(/config:name="([^"]+)" config:type="([^"]+)">([^<]*)</g)];
    expect(items.map(([, name, type, value]) => `${name} ${type} ${value}`)).toEqual([
      'TabOverMargin boolean true',
      'AddExternalLeading boolean false',
      'PrinterIndependentLayout string disabled',
      'Rsid int 1543273',
    ]);
    expect(settings).not.toMatch(/PAYLOAD|UEFZTE9BRA|Bibliography|c2VjcmV0|view-settings|Views/);
    expect(
      execFileSync('unzip', ['-p', path, 'META-INF/manifest.xml'], { encoding: 'utf8' }),
    ).toContain('manifest:full-path="settings.xml"');
  });

  it('leaves out a settings.xml that does not read as XML, and keeps the document', async () => {
    for (const settings of [
      '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "b">]><office:document-settings/>',
      '<office:document-settings><office:settings>',
    ]) {
      const input = await buildOdt({ texts: ['Settings'], settings });
      const outcome = cleaned(await disarm({ bytes: input, fileName: 'a.odt' }));
      const { listing, text } = await unzipped(outcome.bytes);
      expect(listing.join('\n')).not.toContain('settings.xml');
      expect(text).toContain('Settings');
    }
  });

  it.each([
    ['OpenOffice.org 3.0-3.1 (ODF 1.1)', '1.1'],
    ['OpenOffice.org 3.2 (ODF 1.2)', '1.2'],
  ] as const)(
    'rebuilds a text as %s wrote it, its manifest declaring a DOCTYPE; the rebuilt one has none',
    async (_, odfVersion) => {
      const input = await buildOdt({
        texts: ['Minutes of the meeting'],
        odfVersion,
        manifestDoctype: true,
        settings: true,
      });
      const manifest = (await unzipped(input)).text;
      expect(manifest).toContain('"-//OpenOffice.org//DTD Manifest 1.0//EN" "Manifest.dtd">');
      const outcome = cleaned(await disarm({ bytes: input, fileName: 'a.odt' }));
      const { listing, text } = await unzipped(outcome.bytes);
      expect(listing.map((line) => line.split(/\s+/).at(-1))).toContain('settings.xml');
      expect(text).toContain('Minutes of the meeting');
      expect(text).toContain(`office:version="${odfVersion}"`);
      expect(text).not.toContain('<!DOCTYPE');
    },
  );

  it('declares content.xml’s version in the manifest when content.xml is the only stream', async () => {
    const outcome = cleaned(await disarm({ bytes: await buildOdf('odt'), fileName: 'a.odt' }));
    const { text } = await unzipped(outcome.bytes, 'META-INF/manifest.xml');
    expect(text).toContain('<manifest:manifest xmlns:manifest=');
    expect(text).toContain('manifest:version="1.3"');
    expect(text).not.toContain('"1.2"');
  });

  it('reads past a DOCTYPE in any stream, as OpenOffice.org 1.x wrote one in each', async () => {
    const doctype = (root: string): string =>
      `<!DOCTYPE ${root} PUBLIC "-//OpenOffice.org//DTD OfficeDocument 1.0//EN" "office.dtd">`;
    const input = await rezipped(
      await buildOdt({ texts: ['Kept'], manifestDoctype: true, settings: true }),
      (text) => {
        const root = /<(office:document-[a-z]+)/.exec(text)?.[1];
        return root === undefined ? text : text.replace('?>', `?>\n${doctype(root)}`);
      },
    );
    // content.xml, meta.xml, settings.xml.
    expect((await unzipped(input)).text.match(/\/\/DTD OfficeDocument/g)).toHaveLength(3);
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'a.odt' }));
    const { listing, text } = await unzipped(outcome.bytes);
    // settings.xml was read, not left out as unreadable.
    expect(listing.map((line) => line.split(/\s+/).at(-1))).toContain('settings.xml');
    expect(text).toContain('Kept');
    expect(text).not.toContain('<!DOCTYPE');
  });

  it('reads a package whose end is in ZIP64 format (APPNOTE 4.4.1.4), and refuses one split over disks', async () => {
    const input = withZip64End(await buildOdt({ texts: ['Kept text'] }));
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'a.odt' }));
    expect(Buffer.from(outcome.bytes.subarray(-42, -22)).readUInt32LE(0)).not.toBe(0x07064b50);
    expect((await unzipped(outcome.bytes)).text).toContain('Kept text');
    const split = withZip64End(await buildOdt(), { zip64: { countOnDisk: 2 } });
    expect(await disarm({ bytes: split, fileName: 'a.odt' })).toMatchObject({
      status: 'rejected',
      reason: 'invalid_file',
      detail: expect.stringContaining(
        'spans several disks (2 of its 4 central-directory records',
      ) as unknown,
    });
  });

  it('refuses a DOCTYPE with an internal subset in the manifest or a stream, saying so', async () => {
    const subset =
      '<!DOCTYPE manifest:manifest [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;">]>';
    for (const input of [
      await buildOdt({ manifestDoctype: subset }),
      await rezipped(await buildOdt(), (text) =>
        text.includes('<office:document-content')
          ? text.replace(
              '?>',
              `?>${subset.replace('manifest:manifest', 'office:document-content')}`,
            )
          : text,
      ),
    ]) {
      expect(await disarm({ bytes: input, fileName: 'a.odt' })).toMatchObject({
        status: 'rejected',
        reason: 'invalid_file',
        detail: expect.stringMatching(
          /DOCTYPE with an internal subset, which is not allowed/,
        ) as unknown,
      });
    }
  });

  it('removes Basic libraries, scripts, event listeners and script URLs', async () => {
    const input = await buildOdt({ basic: true, scripts: true, payload: 'Shell("calc.exe")' });
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'a.odt' }));
    // The Basic folder, the document's listener, the vnd.sun.star.script: link.
    expect(findingsOf(outcome)).toEqual({ 'odf-macro': 3 });
    const { listing, text } = await unzipped(outcome.bytes);
    expect(listing.some((line) => line.includes('Basic/'))).toBe(false);
    expect(text).not.toMatch(/calc\.exe|vnd\.sun\.star\.script|event-listener|Basic/);
    expect(text).toContain('click me');
  });

  it('removes embedded objects, DDE, external hyperlinks, custom metadata and remote templates', async () => {
    const input = await buildOdt({
      object: true,
      dde: true,
      metadata: true,
      hyperlinks: ['file:///etc/passwd', 'macro:///Standard.Module1.Main', 'mailto:a@example.com'],
    });
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'a.odt' }));
    expect(findingsOf(outcome)).toEqual({
      'embedded-object': 2,
      'dde-link': 2,
      'external-relationship': 1,
      'odf-macro': 1,
      'document-metadata': 2,
    });
    const { listing, text } = await unzipped(outcome.bytes);
    expect(listing.some((line) => /Object 1|ObjectReplacements/.test(line))).toBe(false);
    expect(text).not.toMatch(/draw:object|dde-connection|file:\/\/|macro:|user-defined|attacker/);
    expect(text).toContain('mailto:a@example.com');
    expect(text).toContain('dde value');
  });

  it('rebuilds pictures through the image handler and lists them in the manifest', async () => {
    const png = await buildImage('png', {
      width: 16,
      height: 16,
      exif: { Artist: 'Secret Agent' },
    });
    const outcome = cleaned(
      await disarm({ bytes: await buildOdt({ image: png }), fileName: 'a.odt' }),
    );
    expect(findingsOf(outcome)).toEqual({ 'image-metadata': 1 });
    const { text } = await unzipped(outcome.bytes);
    expect(text).not.toContain('Secret Agent');
    expect(text).toContain(
      'manifest:full-path="Pictures/image1.png" manifest:media-type="image/png"',
    );
  });

  it('keeps a blank bitmap picture that compresses a thousandfold: a ratio alone is not a bomb', async () => {
    // A white 24-bit BMP, 2000 x 1500 (8.6 MiB), which LibreOffice deflates about 1030-fold.
    const width = 2000;
    const height = 1500;
    const bmp = encodeBmp({
      width,
      height,
      channels: 3,
      data: new Uint8Array(width * height * 3).fill(0xff),
    });
    const input = await buildOdt({ image: bmp, imageExtension: 'bmp' });
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'a.odt' }));
    const { listing } = await unzipped(outcome.bytes, 'META-INF/manifest.xml');
    expect(listing.find((line) => line.endsWith('Pictures/image1.bmp'))).toContain(
      String(bmp.length),
    );
    // What it expands to still counts against the content ceiling.
    const capped = await disarm(
      { bytes: input, fileName: 'a.odt' },
      { limits: { maxBytes: 4 * 1024 * 1024 } },
    );
    expect(capped).toMatchObject({ status: 'rejected', reason: 'file_too_large' });
    if (capped.status === 'rejected') expect(capped.detail).toMatch(/past the 4 MiB ceiling/);
  });

  it('refuses a part past the expansion ratio once it expands past 64 MiB', async () => {
    const input = await buildOdt({ image: Buffer.alloc(80 * 1024 * 1024), imageExtension: 'bmp' });
    const outcome = await disarm({ bytes: input, fileName: 'a.odt' });
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'file_too_large' });
    if (outcome.status === 'rejected') {
      expect(outcome.detail).toMatch(/"Pictures\/image1\.bmp" expands \d+ times to 80 MiB/);
    }
  });

  it("keeps an Office object's EMF replacement image in its frame, rebuilt; the object goes", async () => {
    const share = '\\\\attacker.example\\share\\x.icc';
    const emf = buildEmf({ emfPlus: 'dual', iccProfile: share, description: 'Word\0Object\0\0' });
    const input = await buildOdt({ texts: ['Report'], olePreview: { kind: 'emf', bytes: emf } });
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'a.odt' }));
    expect(findingsOf(outcome)).toEqual({
      // The object's member and its anchor, as for any object.
      'embedded-object': 2,
      // The EMF+ comments, the profile on a share, the header's description.
      'hidden-data': 1,
      'external-relationship': 1,
      'document-metadata': 1,
    });
    const { listing, text } = await unzipped(outcome.bytes);
    const names = listing.map((line) => line.replace(/^.*? \d\d:\d\d /, ''));
    expect(names).toContain('ObjectReplacements/Object 3');
    expect(names).not.toContain('Object 3');
    // Metafiles are deflated.
    expect(listing.find((line) => line.endsWith('ObjectReplacements/Object 3'))).toContain('defN');
    expect(text).toContain(
      '<draw:frame draw:name="Object3" text:anchor-type="as-char" svg:width="2.7cm" svg:height="1.75cm"><draw:image xlink:href="./ObjectReplacements/Object 3"',
    );
    expect(text).not.toContain('draw:object-ole');
    expect(text).not.toContain('Ole10Native');
    expect(text).toContain(
      'manifest:full-path="ObjectReplacements/Object 3" manifest:media-type="image/x-emf"',
    );
    // The caption is still drawn (UTF-16 in an EMR_EXTTEXTOUTW); the share and description are gone.
    const utf16 = (value: string): string => Buffer.from(value, 'utf16le').toString('latin1');
    expect(text).toContain(utf16('Quarterly report.xlsx'));
    expect(text).not.toContain(utf16('attacker.example'));
    expect(text).not.toContain(utf16('Word'));
  });

  it('keeps a raster replacement image and a WMF picture, each rebuilt; an SVM replacement goes', async () => {
    const png = await buildImage('png', {
      width: 32,
      height: 24,
      exif: { Artist: 'Secret Agent' },
    });
    const wmf = buildWmf({ escape: 'printer-setup-secret' });
    const outcome = cleaned(
      await disarm({
        bytes: await buildOdt({
          object: true,
          olePreview: { kind: 'png', bytes: png },
          image: wmf,
          imageExtension: 'wmf',
        }),
        fileName: 'a.odt',
      }),
    );
    expect(findingsOf(outcome)).toEqual({
      'embedded-object': 4,
      'image-metadata': 1,
      'hidden-data': 1,
    });
    const { listing, text } = await unzipped(outcome.bytes);
    const names = listing.map((line) => line.replace(/^.*? \d\d:\d\d /, ''));
    expect(names.filter((name) => /Pictures|Replacements/.test(name))).toEqual([
      'ObjectReplacements/Object 3',
      'Pictures/image1.wmf',
    ]);
    expect(text).not.toMatch(/Secret Agent|printer-setup-secret|SVM-replacement/);
    expect(text).toContain(
      'manifest:full-path="ObjectReplacements/Object 3" manifest:media-type="image/png"',
    );
    expect(text).toContain(
      'manifest:full-path="Pictures/image1.wmf" manifest:media-type="image/x-wmf"',
    );
    // The frame of the object whose replacement is SVM goes whole.
    expect(text).not.toContain('ObjectReplacements/Object 1');
    expect(text).toContain('<draw:image xlink:href="Pictures/image1.wmf"');
  });

  it('is deterministic and idempotent', async () => {
    const input = await buildOdt({ basic: true, scripts: true, object: true });
    const first = cleaned(await disarm({ bytes: input, fileName: 'a.odt' }));
    const again = cleaned(await disarm({ bytes: input, fileName: 'a.odt' }));
    expect(Buffer.compare(Buffer.from(first.bytes), Buffer.from(again.bytes))).toBe(0);
    const second = cleaned(await disarm({ bytes: first.bytes, fileName: 'a.odt' }));
    expect(second.findings).toEqual([]);
    expect(Buffer.compare(Buffer.from(second.bytes), Buffer.from(first.bytes))).toBe(0);
  });

  it('rejects encrypted packages, threats inside and DOCTYPEs; draws .ods/.odp with the built-in renderer when none is configured', async () => {
    expect(
      await disarm({ bytes: await buildOdf('odt', { encrypted: true }), fileName: 'a.odt' }),
    ).toMatchObject({
      reason: 'password_protected',
    });
    const infected = await buildZip([
      { name: 'mimetype', data: 'application/vnd.oasis.opendocument.text', compress: false },
      {
        name: 'content.xml',
        data: '<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"/>',
      },
      { name: 'Scripts/x.bin', data: EICAR_TEST_FILE },
    ]);
    expect(await disarm({ bytes: infected, fileName: 'a.odt' })).toMatchObject({
      reason: 'threat_detected',
    });
    const doctype = await buildZip([
      { name: 'mimetype', data: 'application/vnd.oasis.opendocument.text', compress: false },
      {
        name: 'content.xml',
        data: '<!DOCTYPE x [<!ENTITY a "b">]><office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0">&a;</office:document-content>',
      },
    ]);
    expect(await disarm({ bytes: doctype, fileName: 'a.odt' })).toMatchObject({
      reason: 'invalid_file',
    });
    for (const extension of ['ods', 'odp'] as const) {
      expect(
        await disarm({ bytes: await buildOdf(extension), fileName: `a.${extension}` }),
      ).toMatchObject({
        status: 'cleaned',
        fileName: 'a.pdf',
        format: 'pdf',
        modifications: ['rebuilt', 'converted'],
      });
    }
  });
});

describe('ODF structures the fuzzer found (npm run fuzz -- odf)', () => {
  it('keeps no script URL or outside link on the kept elements of meta.xml', async () => {
    // `xlink:href="macro:x"` on office:document-meta was kept; the part check then refused the
    // rebuilt stream and the file failed (ERR_INTERNAL) instead of being cleaned.
    const input = await rezipped(await buildOdt(), (text) =>
      text.replace(
        /<office:document-meta /,
        '<office:document-meta xlink:href="macro:x" meta:generator="vnd.sun.star.script:x" ',
      ),
    );
    const outcome = cleaned(await disarm({ bytes: input, fileName: 'a.odt' }));
    expect(findingsOf(outcome)).toMatchObject({ 'odf-macro': 2 });
    const { text } = await unzipped(outcome.bytes, 'meta.xml');
    expect(text).not.toMatch(/macro:|vnd\.sun\.star\.script/);
  });
});

import { checkWhole, verdictOn, WalkedPartCheck } from '../office/part-checks.ts';
import { COMPRESSION_STORED, matchesCrc, openZip, readMember } from '../../_internal/zip-reader.ts';
import { checkMetafile, metafileKindOf } from '../image/metafile/metafile.ts';
import { assertPixelsOnly } from '../image/verify.ts';
import { extensionOf } from '../../formats.ts';
import type { DetectedFile, EngineContext, HandlerOutput } from '../types.ts';
import { VerifyFailure } from '../types.ts';
import { ODF_NS } from './content.ts';
import { checkOdfStream } from './part-check.ts';
import { settingsWalker } from './settings.ts';
import {
  CHART_FOLDER,
  CHART_MEDIA_TYPE,
  CHART_STREAMS,
  ODF_IMAGE_TYPES,
  ODF_MEDIA_TYPES,
  ODF_STREAMS,
  odfKindOf,
  REPLACEMENT_PICTURE,
  replacementExtension,
} from './rebuild.ts';

/**
 * ODF checks of verify before release, on the written package re-listed with yauzl and re-read
 * with saxes: `mimetype` first, stored, naming a type of the input's kind; only the kept streams, pictures
 * (metafiles read back, `odf.metafile`), the rebuilt settings and the manifest; the manifest lists exactly the members; every
 * XML stream parses without a DTD and holds no script, event listener, embedded object, DDE or
 * script URL; the settings hold only the configuration items the rebuild keeps.
 */
export async function verifyOdf(
  output: HandlerOutput,
  input: DetectedFile,
  context: EngineContext,
): Promise<void> {
  const mediaTypes = ODF_MEDIA_TYPES[odfKindOf(input)];
  const listing = await openZip(output.bytes, context.limits.maxEntries).catch((error: unknown) => {
    throw new VerifyFailure('odf.zip', `the written package cannot be listed: ${String(error)}`);
  });
  try {
    if (listing.trailingBytes > 0) {
      throw new VerifyFailure('odf.zip', 'bytes follow the end of the written package');
    }
    const first = listing.members[0];
    if (
      first?.name !== 'mimetype' ||
      first.compressionMethod !== COMPRESSION_STORED ||
      first.extraFieldBytes !== 0
    ) {
      throw new VerifyFailure('odf.mimetype', 'mimetype is not the first, stored member');
    }
    // Members are inflated one at a time when checked (pictures only for their data and CRC).
    const members = new Map(listing.members.map((member) => [member.name, member]));
    const read = async (name: string): Promise<Uint8Array | undefined> => {
      const member = members.get(name);
      if (!member) return undefined;
      const data = await readMember(listing, member, context.limits.maxBytes, member.name);
      if (!matchesCrc(member, data)) {
        throw new VerifyFailure('odf.zip', `member ${name} does not match its CRC-32`);
      }
      return data;
    };
    const mediaType = new TextDecoder().decode(await read('mimetype'));
    if (!mediaTypes.includes(mediaType)) {
      throw new VerifyFailure('odf.mimetype', `mimetype names ${mediaType}`);
    }
    const manifest = await read('META-INF/manifest.xml');
    if (!manifest) throw new VerifyFailure('odf.part-allowlist', 'no META-INF/manifest.xml');
    // The paths the manifest lists with their media types, collected as the check's references.
    const { references: listed } = checkWhole(
      new WalkedPartCheck('META-INF/manifest.xml', 'odf.xml-parse', (entries) => ({
        open(element) {
          if (element.uri !== ODF_NS.manifest) return;
          if (element.localName === 'encryption-data')
            throw new VerifyFailure('odf.manifest', 'encryption data');
          const attribute = (local: string): string | undefined =>
            element.attributes.find((a) => a.uri === ODF_NS.manifest && a.local === local)?.value;
          const path = attribute('full-path');
          if (element.localName === 'file-entry' && path !== undefined && path !== '/') {
            entries.set(path, attribute('media-type') ?? '');
          }
        },
      })),
      manifest,
    );
    // Chart objects: folders the manifest names as charts, holding their content.
    const charts = new Set<string>();
    for (const [path, type] of listed) {
      const folder = CHART_FOLDER.exec(path)?.[1];
      if (folder === undefined) continue;
      if (type !== CHART_MEDIA_TYPE || !members.has(`${folder}/content.xml`)) {
        throw new VerifyFailure('odf.manifest', `the manifest lists ${path} as ${type}`);
      }
      charts.add(folder);
    }
    const chartStreams = [...charts].flatMap((folder) =>
      CHART_STREAMS.map((stream) => `${folder}/${stream}`),
    );
    for (const name of members.keys()) {
      const extension = extensionOf(name);
      const allowed =
        name === 'mimetype' ||
        name === 'META-INF/manifest.xml' ||
        ODF_STREAMS.includes(name) ||
        name === 'settings.xml' ||
        chartStreams.includes(name) ||
        ((name.startsWith('Pictures/') || name === 'Thumbnails/thumbnail.png') &&
          ODF_IMAGE_TYPES[extension] !== undefined) ||
        REPLACEMENT_PICTURE.test(name);
      if (!allowed)
        throw new VerifyFailure('odf.part-allowlist', `member ${name} is outside the allowlist`);
    }
    const expected = [
      ...[...members.keys()].filter((n) => n !== 'mimetype' && n !== 'META-INF/manifest.xml'),
      ...[...charts].map((folder) => `${folder}/`),
    ];
    if (expected.length !== listed.size || expected.some((name) => !listed.has(name))) {
      throw new VerifyFailure('odf.manifest', 'the manifest does not list exactly the members');
    }
    for (const stream of [...ODF_STREAMS, ...chartStreams]) {
      if (!members.has(stream)) {
        if (stream === 'content.xml')
          throw new VerifyFailure('odf.part-allowlist', 'no content.xml');
        continue;
      }
      const bytes = await read(stream);
      if (!bytes) throw new VerifyFailure('odf.part-allowlist', `no ${stream}`);
      const report =
        (await verdictOn(
          output.checkedParts?.get(stream),
          bytes,
          stream,
          'odf.zip',
          context.deadline,
        )) ?? checkOdfStream(bytes, stream);
      for (const [path, link] of report.references) {
        // The document's own streams may name a kept chart; a chart's, its own document.
        const resolves = chartStreams.includes(stream)
          ? path === '.'
          : members.has(path) || charts.has(path);
        if (!resolves) throw new VerifyFailure('odf.active-content', `${stream} links ${link}`);
      }
    }
    const settings = await read('settings.xml');
    if (settings) {
      checkWhole(new WalkedPartCheck('settings.xml', 'odf.xml-parse', settingsWalker), settings);
    }
    for (const name of members.keys()) {
      const replacement = REPLACEMENT_PICTURE.test(name);
      if (!replacement && !name.startsWith('Pictures/') && name !== 'Thumbnails/thumbnail.png') {
        continue;
      }
      const bytes = await read(name);
      if (!bytes) continue;
      // Raster pictures passed the image handler's own verify; a replacement image, named
      // without an extension, is checked as what its bytes are, and metafiles are read back.
      const extension = replacement ? replacementExtension(bytes) : extensionOf(name);
      if (extension === undefined) {
        throw new VerifyFailure('odf.part-allowlist', `member ${name} is not a kept picture`);
      }
      const metafile = metafileKindOf(extension);
      if (metafile !== undefined) {
        const fault = checkMetafile(bytes, metafile);
        if (fault !== undefined)
          throw new VerifyFailure('odf.metafile', `picture ${name}: ${fault}`);
      } else if (replacement) {
        assertPixelsOnly(bytes, extension);
      }
    }
  } finally {
    listing.file.close();
  }
}

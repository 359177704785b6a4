import { forEachLimited, MEMBER_CONCURRENCY } from '../../_internal/concurrency.ts';
import {
  PACKAGE_TIME,
  prepareChecksFor,
  rebuildPackageImage,
  withOfficePackage,
} from '../office/package-zip.ts';
import type { OfficePackage, PackageMember } from '../office/package-zip.ts';
import { Rejection } from '../../_internal/rejection.ts';
import { paceWith, walkXml } from '../../_internal/xml-rewrite.ts';
import { checkedWhileWritten } from '../office/part-checks.ts';
import { writeZip } from '../../_internal/zip-writer.ts';
import type { ZipWriteEntry } from '../../_internal/zip-writer.ts';
import { sniff } from '../../detect/sniff.ts';
import { extensionOf } from '../../formats.ts';
import { FindingTally } from '../../findings.ts';
import { metafileKindOf, metafileKindOfBytes } from '../image/metafile/metafile.ts';
import type { DetectedFile, EngineContext, HandlerOutput, PartCheckResult } from '../types.ts';
import { RenderBudget } from './budget.ts';
import { ODF_NS, rewriteOdfStream } from './content.ts';
import { readOdfSettings, settingsXml } from './settings.ts';
import type { SettingsItem } from './settings.ts';

/** The kinds of OpenDocument package on the allowlist. */
export type OdfKind = 'odf-text' | 'odf-spreadsheet' | 'odf-presentation';

/** ODF 1.3 Part 2 §3.3: the media types a package of each kind may declare (a template too). */
export const ODF_MEDIA_TYPES: Readonly<Record<OdfKind, readonly string[]>> = {
  'odf-text': [
    'application/vnd.oasis.opendocument.text',
    'application/vnd.oasis.opendocument.text-template',
  ],
  'odf-spreadsheet': [
    'application/vnd.oasis.opendocument.spreadsheet',
    'application/vnd.oasis.opendocument.spreadsheet-template',
  ],
  'odf-presentation': [
    'application/vnd.oasis.opendocument.presentation',
    'application/vnd.oasis.opendocument.presentation-template',
  ],
};

/** The package kind of a format row of the ODF family. */
export function odfKindOf(input: DetectedFile): OdfKind {
  const kind = input.format.kind;
  if (kind === 'odf-text' || kind === 'odf-spreadsheet' || kind === 'odf-presentation') {
    return kind;
  }
  throw new TypeError(`.${input.format.extension} is not an OpenDocument format`);
}

/**
 * Pictures kept under `Pictures/` (and the thumbnail), by extension: raster images rebuilt through
 * the image handler, metafiles through the metafile rebuild.
 */
export const ODF_IMAGE_TYPES: Readonly<Record<string, string>> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  bmp: 'image/bmp',
  tif: 'image/tiff',
  tiff: 'image/tiff',
  wmf: 'image/x-wmf',
  emf: 'image/x-emf',
};

/**
 * ODF 1.3 Part 3 §10.4.2: a frame holding an object may hold a replacement image of it, which
 * consumers show in its place. LibreOffice stores it as `ObjectReplacements/Object 1`, without an
 * extension: its bytes say what it is.
 */
export const REPLACEMENT_PICTURE = /^ObjectReplacements\/[^/]+$/;

/**
 * The extension a replacement image's bytes show, when it is a picture this engine rebuilds:
 * EMF and WMF (objects from Office), or a raster image. LibreOffice's own metafile format (SVM)
 * is not among them, so such a replacement is left out with its object.
 */
export function replacementExtension(bytes: Uint8Array): string | undefined {
  const metafile = metafileKindOfBytes(bytes);
  if (metafile !== undefined) return metafile;
  const sniffed = sniff(bytes);
  return ODF_IMAGE_TYPES[sniffed] === undefined ? undefined : sniffed;
}

/** What a chart's streams may link: the chart's own document. */
const SELF: ReadonlySet<string> = new Set(['.']);

/** XML streams kept (rewritten); everything else but images is dropped. */
export const ODF_STREAMS: readonly string[] = ['content.xml', 'styles.xml', 'meta.xml'];

/** ODF 1.3 Part 1 §7.2: the media type of a chart sub-document. */
export const CHART_MEDIA_TYPE = 'application/vnd.oasis.opendocument.chart';

/** A top-level object folder as the manifest lists it (`Object 1/`), and its name. */
export const CHART_FOLDER = /^(Object \d{1,6})\/$/;

/** The streams of a chart object kept (rewritten), under its folder. */
export const CHART_STREAMS: readonly string[] = ['content.xml', 'styles.xml'];

/** Top-level folders that hold macros (Basic libraries, scripts, dialogs with their events). */
const MACRO_FOLDERS = new Set(['basic', 'scripts', 'dialogs']);

/**
 * Rebuilds an OpenDocument text, spreadsheet or presentation package: `mimetype` first and stored, `content.xml`, `styles.xml` and
 * `meta.xml` rewritten (see `content.ts`), pictures under `Pictures/`, the thumbnail and the
 * replacement images of objects rebuilt (raster images through the image handler, EMF and WMF
 * through the metafile rebuild), and a new `META-INF/manifest.xml` listing exactly those.
 * `settings.xml` is rebuilt from an allowlist of configuration switches (see `settings.ts`).
 * Chart objects (`Object N/` declared a chart in the manifest) keep their content and styles,
 * rewritten like the document's streams. Basic, script and dialog folders, other embedded
 * objects (dropped and counted; their frame keeps its replacement image), configurations and
 * signatures are left out. A spreadsheet's or presentation's `content.xml` is counted against
 * the render budget while it is rewritten (see `budget.ts`): the package is what a renderer draws
 * (see `convert.ts`).
 */
export async function rebuildOdf(
  input: DetectedFile,
  context: EngineContext,
): Promise<HandlerOutput> {
  const kind = odfKindOf(input);
  return withOfficePackage(input, context, (pkg, what) => rebuildPackage(pkg, context, what, kind));
}

async function rebuildPackage(
  pkg: OfficePackage,
  context: EngineContext,
  what: string,
  kind: OdfKind,
): Promise<HandlerOutput> {
  const { mediaType, charts } = await readManifest(pkg, what, kind);
  const budget = kind === 'odf-text' ? undefined : new RenderBudget(what);
  prepareChecksFor(pkg);
  const findings = new FindingTally();
  findings.add('trailing-data', pkg.trailingBytes > 0 ? 1 : 0);
  /** Kept pictures by path, with the extension that names their kind. */
  const images = new Map<string, { bytes: Uint8Array; extension: string }>();
  const countedObjects = new Set<string>();
  const pictures: PackageMember[] = [];
  for (const member of pkg.members) {
    context.deadline.check();
    const name = member.name;
    const folded = name.toLowerCase();
    const top = folded.split('/')[0] ?? '';
    const extension = extensionOf(folded);
    if (folded === 'mimetype' || folded === 'meta-inf/manifest.xml' || ODF_STREAMS.includes(name)) {
      continue;
    }
    const isPicture = name.startsWith('Pictures/') || name === 'Thumbnails/thumbnail.png';
    const folder = name.includes('/') ? name.slice(0, name.indexOf('/')) : '';
    if (charts.has(folder)) {
      // A chart: its content and styles are rewritten below; nothing else of it is needed.
      const inside = name.slice(folder.length + 1);
      if (!CHART_STREAMS.includes(inside) && !['meta.xml', 'settings.xml', ''].includes(inside)) {
        findings.at({ part: name }).add('hidden-data');
      }
    } else if (
      (isPicture && ODF_IMAGE_TYPES[extension] !== undefined) ||
      REPLACEMENT_PICTURE.test(name)
    ) {
      pictures.push(member);
    } else if (MACRO_FOLDERS.has(top)) {
      if (!countedObjects.has(top)) findings.at({ part: folderOf(name) }).add('odf-macro');
      countedObjects.add(top);
    } else if (/^object \d+$/i.test(top) || /^object \d+$/i.test(name.split('/')[0] ?? '')) {
      if (!countedObjects.has(top)) findings.at({ part: folderOf(name) }).add('embedded-object');
      countedObjects.add(top);
    } else if (top === 'configurations2') {
      // Toolbars and menus may bind macros; the folder is dropped either way.
      if (/vnd\.sun\.star\.script:|macro:/i.test(new TextDecoder().decode(await member.read()))) {
        findings.at({ part: name }).add('odf-macro');
      }
    } else if (
      folded !== 'settings.xml' &&
      folded !== 'manifest.rdf' &&
      top !== 'objectreplacements' &&
      folded !== 'layout-cache'
    ) {
      findings.at({ part: name }).add('hidden-data');
    }
  }
  // Pictures are rebuilt one per CPU at once, and written in the package's order.
  const rebuiltPictures = new Map<PackageMember, { bytes: Uint8Array; extension: string }>();
  await forEachLimited(pictures, MEMBER_CONCURRENCY, async (member) => {
    const bytes = await member.read();
    const replacement = REPLACEMENT_PICTURE.test(member.name);
    const extension = replacement ? replacementExtension(bytes) : extensionOf(member.name);
    // A replacement image of another kind goes with its object, as before it was kept.
    if (extension === undefined) return;
    const fileName = replacement ? `${member.name}.${extension}` : member.name;
    const rebuilt = await rebuildPackageImage(
      { bytes, fileName },
      pkg,
      context,
      findings.at({ part: member.name }),
    );
    if (rebuilt) rebuiltPictures.set(member, { bytes: rebuilt, extension });
  });
  for (const member of pictures) {
    const rebuilt = rebuiltPictures.get(member);
    if (rebuilt) images.set(member.name, rebuilt);
  }
  const content = pkg.byFoldedName.get('content.xml');
  if (content?.name !== 'content.xml') {
    throw new Rejection('invalid_file', `${what} has no content.xml`);
  }
  // Charts are kept when their content is there; the paths links may name.
  const keptCharts = [...charts].filter(
    (folder) =>
      pkg.byFoldedName.get(`${folder}/content.xml`.toLowerCase())?.name === `${folder}/content.xml`,
  );
  const kept = new Set([...images.keys(), ...keptCharts]);
  const pace = paceWith(context.deadline);
  const entries: ZipWriteEntry[] = [
    {
      path: 'mimetype',
      bytes: new TextEncoder().encode(mediaType),
      modifiedAt: PACKAGE_TIME,
      compress: false,
    },
  ];
  const manifest: [string, string][] = [];
  const checkedParts = new Map<string, Promise<PartCheckResult>>();
  // The zip writer makes the next entry while it deflates one, so the settings and the manifest
  // may be started before content.xml is read: they wait for its version.
  let versionRead: (version: string) => void = () => undefined;
  const version = new Promise<string>((resolve) => {
    versionRead = resolve;
  });
  for (const stream of ODF_STREAMS) {
    const member = pkg.byFoldedName.get(stream);
    if (member?.name !== stream) continue;
    const rewritten = async function* (): AsyncGenerator<Uint8Array, void, undefined> {
      const source = await member.read();
      if (stream === 'content.xml') versionRead(officeVersion(source));
      yield* rewriteOdfStream(
        source,
        stream,
        {
          kept,
          meta: stream === 'meta.xml',
          findings: findings.at({ part: stream }),
          ...(stream === 'content.xml' && budget && { observe: budget.observe.bind(budget) }),
        },
        pace,
      );
    };
    // Each stream is read, rewritten and deflated when the writer reaches it: one at a time.
    entries.push({
      path: stream,
      // Checked in a worker while written, for verify before release.
      bytes: () =>
        checkedWhileWritten(rewritten(), 'odf-xml', stream, checkedParts, stream, context.deadline),
      modifiedAt: PACKAGE_TIME,
      compress: true,
    });
    manifest.push([stream, 'text/xml']);
  }
  for (const folder of keptCharts) {
    manifest.push([`${folder}/`, CHART_MEDIA_TYPE]);
    for (const stream of CHART_STREAMS) {
      const path = `${folder}/${stream}`;
      const member = pkg.byFoldedName.get(path.toLowerCase());
      if (member?.name !== path) continue;
      // A chart links nothing but its own document (`xlink:href="."` on chart:chart).
      const rewritten = async function* (): AsyncGenerator<Uint8Array, void, undefined> {
        yield* rewriteOdfStream(
          await member.read(),
          path,
          { kept: SELF, meta: false, findings: findings.at({ part: path }) },
          pace,
        );
      };
      entries.push({
        path,
        bytes: () =>
          checkedWhileWritten(rewritten(), 'odf-xml', path, checkedParts, path, context.deadline),
        modifiedAt: PACKAGE_TIME,
        compress: true,
      });
      manifest.push([path, 'text/xml']);
    }
  }
  const settings = pkg.byFoldedName.get('settings.xml');
  if (settings?.name === 'settings.xml') {
    const items = await readSettingsOrNone(settings);
    if (items.length > 0) {
      entries.push({
        path: 'settings.xml',
        bytes: async function* () {
          yield new TextEncoder().encode(settingsXml(items, await version));
        },
        modifiedAt: PACKAGE_TIME,
        compress: true,
      });
      manifest.push(['settings.xml', 'text/xml']);
    }
  }
  for (const [path, { bytes, extension }] of images) {
    // Raster images are stored as they are; metafiles deflate well.
    const compress = metafileKindOf(extension) !== undefined;
    entries.push({ path, bytes, modifiedAt: PACKAGE_TIME, compress });
    manifest.push([path, ODF_IMAGE_TYPES[extension] ?? '']);
  }
  entries.push({
    path: 'META-INF/manifest.xml',
    bytes: async function* () {
      yield new TextEncoder().encode(manifestXml(mediaType, await version, manifest));
    },
    modifiedAt: PACKAGE_TIME,
    compress: true,
  });
  return { bytes: await writeZip(entries), findings: findings.toArray(), checkedParts };
}

/**
 * The kept configuration items of `settings.xml`, or none when the stream does not read as XML
 * (too large, malformed, a DOCTYPE with an internal subset): it only tunes the layout, so the document goes on without
 * it, as it went without settings before they were kept.
 */
async function readSettingsOrNone(member: PackageMember): Promise<SettingsItem[]> {
  // The member itself is read as strictly as every other: a damaged zip entry fails the file.
  const bytes = await member.read();
  try {
    return readOdfSettings(bytes, 'settings.xml');
  } catch (error) {
    if (error instanceof Rejection) return [];
    throw error;
  }
}

/** ODF 1.3 Part 2 §3.3: the `mimetype` stream (or the manifest's root entry) names the type. */
async function readManifest(
  pkg: OfficePackage,
  what: string,
  kind: OdfKind,
): Promise<{ mediaType: string; charts: Set<string> }> {
  const manifest = pkg.byFoldedName.get('meta-inf/manifest.xml');
  let rootType: string | undefined;
  const charts = new Set<string>();
  if (manifest) {
    walkXml(await manifest.read(), 'the package manifest', {
      open(element) {
        if (element.uri !== ODF_NS.manifest) return;
        if (element.localName === 'encryption-data') {
          throw new Rejection(
            'password_protected',
            `${what} is encrypted (manifest encryption-data)`,
          );
        }
        const path = element.attributes.find(
          (a) => a.uri === ODF_NS.manifest && a.local === 'full-path',
        );
        const type = element.attributes.find(
          (a) => a.uri === ODF_NS.manifest && a.local === 'media-type',
        )?.value;
        if (element.localName !== 'file-entry' || path === undefined) return;
        if (path.value === '/') rootType = type;
        const folder = CHART_FOLDER.exec(path.value)?.[1];
        if (folder !== undefined && type === CHART_MEDIA_TYPE) charts.add(folder);
      },
    });
  }
  const mimetype = pkg.byFoldedName.get('mimetype');
  const declared = mimetype ? new TextDecoder().decode(await mimetype.read()).trim() : rootType;
  if (declared === undefined || !ODF_MEDIA_TYPES[kind].includes(declared)) {
    throw new Rejection('invalid_file', `${what} is not an OpenDocument ${ODF_KIND_NAMES[kind]}`);
  }
  return { mediaType: declared, charts };
}

/** What each kind is called in a rejection's detail. */
const ODF_KIND_NAMES: Readonly<Record<OdfKind, string>> = {
  'odf-text': 'text package',
  'odf-spreadsheet': 'spreadsheet package',
  'odf-presentation': 'presentation package',
};

/** Ends a walk once the root element has been read. */
class RootRead extends Error {}

/**
 * `office:version` of the content root, written into the manifest (ODF 1.2+ requires both).
 * Only the root start tag is read: the rewrite parses the whole stream anyway.
 */
function officeVersion(content: Uint8Array): string {
  let version = '1.2';
  try {
    walkXml(content, 'content.xml', {
      open(element) {
        const value = element.attributes.find(
          (a) => a.uri === ODF_NS.office && a.local === 'version',
        )?.value;
        if (value !== undefined && /^1\.[0-9]$/.test(value)) version = value;
        throw new RootRead();
      },
    });
  } catch (error) {
    if (!(error instanceof RootRead)) throw error;
  }
  return version;
}

function manifestXml(
  mediaType: string,
  version: string,
  entries: readonly [string, string][],
): string {
  const lines = [
    '<?xml version="1.0" encoding="UTF-8"?>\n',
    `<manifest:manifest xmlns:manifest="${ODF_NS.manifest}" manifest:version="${version}">`,
    `<manifest:file-entry manifest:full-path="/" manifest:version="${version}" manifest:media-type="${mediaType}"/>`,
    ...entries.map(
      ([path, type]) =>
        `<manifest:file-entry manifest:full-path="${escape(path)}" manifest:media-type="${type}"/>`,
    ),
    '</manifest:manifest>',
  ];
  return lines.join('');
}

function escape(value: string): string {
  return value.replace(/[&<>"]/g, (c) =>
    c === '&' ? '&amp;' : c === '<' ? '&lt;' : c === '>' ? '&gt;' : '&quot;',
  );
}

/** The top folder of a member path, as the manifest names a folder (`Basic/`, `Object 1/`). */
function folderOf(name: string): string {
  return `${name.split('/')[0] ?? name}/`;
}

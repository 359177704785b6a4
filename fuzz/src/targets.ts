/**
 * The fuzz targets: one per format family of the allowlist (`packages/core/src/formats.ts`) and
 * one for the HTTP front. Each names its seeds and the mutators that know its structure.
 */
import { describeCompoundFile } from './layout/cfb.ts';
import { describeImage } from './layout/images.ts';
import { describeMarkup, describePdf, describeRtf } from './layout/text.ts';
import { describeGzip, describeZip } from './layout/zip.ts';
import { BYTE_MUTATORS } from './mutate/bytes.ts';
import {
  compoundContainerMutators,
  gzipContainerMutators,
  zipContainerMutators,
} from './mutate/containers.ts';
import { structureMutators } from './mutate/structure.ts';
import type { Mutator } from './mutate/types.ts';
import type { Job } from './exec/protocol.ts';
import { decodeProgram } from './http/program.ts';
import { HTTP_MUTATORS } from './http/mutators.ts';
import { buildHttpSeeds } from './http/seeds.ts';
import { buildSeeds } from './seeds.ts';
import type { Seed } from './seeds.ts';

/** One fuzz target: its seeds, its mutators, and how an input becomes an executor job. */
export interface Target {
  readonly name: string;
  /** Which executor runs it, and whose blocks count as coverage. */
  readonly kind: 'engine' | 'http';
  /** What it covers, for `--help` and the results. */
  readonly description: string;
  readonly mutators: readonly Mutator[];
  /** Its seeds; `quick` leaves out those that take seconds to build. */
  seeds(options?: { quick?: boolean }): Promise<Seed[]>;
  toJob(bytes: Uint8Array, fileName: string): Job;
}

const engine = (name: string, description: string, mutators: readonly Mutator[]): Target => ({
  name,
  kind: 'engine',
  description,
  mutators,
  seeds: (options) => buildSeeds(name, options),
  toJob: (bytes, fileName) => ({ kind: 'engine', fileName, bytes }),
});

/**
 * The member-content mutator `times` over: most of what a package handler does is behind a
 * well-formed zip, so a part's content is changed more often than the container is broken.
 */
function partContent(times: number): Mutator[] {
  const [content] = zipContainerMutators().filter(
    (mutator) => mutator.name === 'zip.member-content',
  );
  return content ? Array.from({ length: times }, () => content) : [];
}

/** Every target, in the order `npm run fuzz` runs them. */
export const TARGETS: readonly Target[] = [
  engine('image', 'jpeg, png, gif, bmp, tiff, webp: chunks, segments, blocks, IFD entries', [
    ...structureMutators('image', describeImage),
    ...BYTE_MUTATORS,
  ]),
  engine('archive', 'zip and gz: members, central directory, end record, gzip header', [
    ...zipContainerMutators(),
    ...gzipContainerMutators(),
    ...structureMutators('zip', describeZip),
    ...structureMutators('gzip', describeGzip),
    ...BYTE_MUTATORS,
  ]),
  engine('pdf', 'pdf and fdf: objects, streams, xref, trailer', [
    ...structureMutators('pdf', describePdf),
    ...BYTE_MUTATORS,
  ]),
  engine('ooxml', 'docx/xlsx/pptx families and xlsb: package parts, relationships, XML', [
    ...zipContainerMutators(),
    ...partContent(4),
    ...structureMutators('zip', describeZip),
    ...BYTE_MUTATORS.slice(0, 4),
  ]),
  engine('odf', 'odt, ods, odp: package members, manifest, content XML', [
    ...zipContainerMutators(),
    ...partContent(4),
    ...structureMutators('zip', describeZip),
    ...BYTE_MUTATORS.slice(0, 4),
  ]),
  engine(
    'cfb',
    'doc/dot, xls, ppt/pps/pot/ppa: compound file sectors, directory, streams, records',
    [
      ...compoundContainerMutators(),
      ...compoundContainerMutators(),
      ...structureMutators('cfb', describeCompoundFile),
      ...BYTE_MUTATORS.slice(0, 6),
    ],
  ),
  engine(
    'rtf',
    'rtf: groups, destinations, control-word parameters, \\bin runs, objects, pictures',
    [...structureMutators('rtf', describeRtf), ...BYTE_MUTATORS],
  ),
  engine('markup', 'html and svg: the sanitiser and the built-in renderer (no Chromium)', [
    ...structureMutators('markup', describeMarkup),
    ...structureMutators('markup', describeMarkup),
    ...BYTE_MUTATORS,
  ]),
  {
    name: 'http',
    kind: 'http',
    description:
      'the v1 fetch handlers on SQLite and a blob folder: multipart, headers, JSON, query strings',
    mutators: HTTP_MUTATORS,
    seeds: buildHttpSeeds,
    toJob: (bytes) => ({ kind: 'http', requests: decodeProgram(bytes) ?? [] }),
  },
];

/** The target named `name`, or `undefined`. */
export function targetNamed(name: string): Target | undefined {
  return TARGETS.find((target) => target.name === name);
}

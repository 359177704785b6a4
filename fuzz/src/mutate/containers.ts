/**
 * Container mutators: read the members of a zip, the content of a gzip or the streams of a
 * compound file, change one (its content mutated as its own format, or the member dropped,
 * duplicated, reordered or renamed), and write a well-formed container again, so the change
 * reaches the code behind the container's integrity checks.
 */
import {
  describeBiffStream,
  describeStream,
  readCompoundStreams,
  writeCompoundStreams,
} from '../layout/cfb.ts';
import { describeImage } from '../layout/images.ts';
import { describeMarkup, describePdf, describeRtf } from '../layout/text.ts';
import type { Describe } from '../layout/types.ts';
import {
  describeGzip,
  describeZip,
  readGzip,
  readZipMembers,
  writeGzip,
  writeZip,
} from '../layout/zip.ts';
import type { ZipMember } from '../layout/zip.ts';
import { BYTE_MUTATORS } from './bytes.ts';
import { structureMutators } from './structure.ts';
import type { MutationContext, Mutator } from './types.ts';

/** Member names worth trying: traversal, absolute, odd separators, case and length. */
const HOSTILE_NAMES = [
  '../evil.xml',
  '/abs.xml',
  'a\\..\\..\\b.xml',
  'dir/',
  '',
  'CON',
  '[Content_Types].xml',
  'word/document.xml',
  'content.xml',
  'mimetype',
  'x'.repeat(300),
  'a/./b/../c.png',
  'nul\u0000.png',
  'e\u0301.png',
];

/** Nesting the member mutators follow (a zip in a zip in a gzip). */
const MAX_NESTED_MUTATION_DEPTH = 3;

const XML_MUTATORS = [...structureMutators('xml', describeMarkup), ...BYTE_MUTATORS.slice(0, 6)];
const IMAGE_MUTATORS = [...structureMutators('image', describeImage), ...BYTE_MUTATORS];
const PDF_MUTATORS = [...structureMutators('pdf', describePdf), ...BYTE_MUTATORS];
const RTF_MUTATORS = [...structureMutators('rtf', describeRtf), ...BYTE_MUTATORS];

/** Mutates `bytes` as the format its name says: the content step of every container mutator. */
export function mutateAsNamed(
  name: string,
  bytes: Uint8Array,
  context: MutationContext,
  depth = 0,
): Uint8Array | undefined {
  const extension = name.slice(name.lastIndexOf('.') + 1).toLowerCase();
  let mutators: readonly Mutator[];
  if (/^(xml|rels|vml|html?|svg|xhtml|rdf)$/.test(extension) || name.endsWith('.xml.rels'))
    mutators = XML_MUTATORS;
  else if (/^(png|jpe?g|gif|bmp|tiff?|webp)$/.test(extension)) mutators = IMAGE_MUTATORS;
  else if (extension === 'pdf') mutators = PDF_MUTATORS;
  else if (extension === 'rtf') mutators = RTF_MUTATORS;
  else if (depth < MAX_NESTED_MUTATION_DEPTH && describeZip(bytes))
    mutators = zipContainerMutators(depth + 1);
  else if (depth < MAX_NESTED_MUTATION_DEPTH && describeGzip(bytes))
    mutators = gzipContainerMutators(depth + 1);
  else mutators = BYTE_MUTATORS;
  return context.choices.pick(mutators).apply(bytes, context);
}

function withMembers(
  operation: (members: ZipMember[], context: MutationContext) => ZipMember[] | undefined,
): Mutator['apply'] {
  return (bytes, context) => {
    const members = readZipMembers(bytes);
    if (!members) return undefined;
    const changed = operation(members, context);
    return changed ? writeZip(changed) : undefined;
  };
}

/** Member-level zip mutators (archives, OOXML and ODF packages). */
export function zipContainerMutators(depth = 0): Mutator[] {
  return [
    {
      name: 'zip.member-content',
      apply: withMembers((members, context) => {
        if (members.length === 0) return undefined;
        const index = context.choices.below(members.length);
        const member = members[index];
        if (!member) return undefined;
        const data = mutateAsNamed(member.name, member.data, context, depth);
        if (!data) return undefined;
        members[index] = { ...member, data };
        return members;
      }),
    },
    {
      name: 'zip.drop-member',
      apply: withMembers((members, { choices }) => {
        if (members.length === 0) return undefined;
        members.splice(choices.below(members.length), 1);
        return members;
      }),
    },
    {
      name: 'zip.duplicate-member',
      apply: withMembers((members, { choices }) => {
        const member = members[choices.below(members.length)];
        if (!member) return undefined;
        members.splice(choices.below(members.length + 1), 0, { ...member });
        return members;
      }),
    },
    {
      name: 'zip.reorder-members',
      apply: withMembers((members, { choices }) => {
        if (members.length < 2) return undefined;
        const from = choices.below(members.length);
        const [member] = members.splice(from, 1);
        if (!member) return undefined;
        members.splice(choices.below(members.length + 1), 0, member);
        return members;
      }),
    },
    {
      name: 'zip.rename-member',
      apply: withMembers((members, { choices }) => {
        const index = choices.below(members.length);
        const member = members[index];
        if (!member) return undefined;
        const other = choices.pick(members).name;
        const name = choices.chance(0.3)
          ? other
          : choices.chance(0.5)
            ? choices.pick(HOSTILE_NAMES)
            : member.name.toUpperCase();
        members[index] = { ...member, name };
        return members;
      }),
    },
    {
      name: 'zip.switch-method',
      apply: withMembers((members, { choices }) => {
        const index = choices.below(members.length);
        const member = members[index];
        if (!member) return undefined;
        members[index] = { ...member, method: member.method === 8 ? 0 : 8 };
        return members;
      }),
    },
  ];
}

/** Gzip mutators: the content mutated as the file it names, then compressed again. */
export function gzipContainerMutators(depth = 0): Mutator[] {
  return [
    {
      name: 'gzip.content',
      apply(bytes, context) {
        const inner = readGzip(bytes);
        if (!inner) return undefined;
        const name = nameInGzip(bytes) ?? 'inner.bin';
        const mutated = mutateAsNamed(name, inner, context, depth);
        return mutated ? writeGzip(mutated, name) : undefined;
      },
    },
    {
      name: 'gzip.concatenate',
      apply(bytes, context) {
        // RFC 1952 2.2: a gzip file is a series of members.
        const inner = readGzip(bytes);
        if (!inner) return undefined;
        return new Uint8Array(
          Buffer.concat([
            bytes,
            writeGzip(context.choices.chance(0.5) ? inner : context.choices.bytes(16)),
          ]),
        );
      },
    },
  ];
}

function nameInGzip(bytes: Uint8Array): string | undefined {
  if (((bytes[3] ?? 0) & 0x08) === 0 || ((bytes[3] ?? 0) & 0x04) !== 0) return undefined;
  const end = bytes.indexOf(0, 10);
  return end > 10 ? Buffer.from(bytes.subarray(10, end)).toString('latin1') : undefined;
}

/** Stream-level compound file mutators (Word, Excel and PowerPoint 97-2003). */
export function compoundContainerMutators(): Mutator[] {
  const streamMutators = (path: string): readonly Mutator[] => {
    const describe: Describe = describeStream(path) ?? describeBiffStream;
    return [...structureMutators('stream', describe), ...BYTE_MUTATORS];
  };
  const withStreams =
    (
      operation: (
        streams: { path: string; content: Uint8Array }[],
        context: MutationContext,
      ) => boolean,
    ): Mutator['apply'] =>
    (bytes, context) => {
      const streams = readCompoundStreams(bytes);
      if (!streams || streams.length === 0) return undefined;
      const copy = streams.map((stream) => ({ ...stream }));
      return operation(copy, context) ? writeCompoundStreams(copy) : undefined;
    };
  return [
    {
      name: 'cfb.stream-content',
      apply: withStreams((streams, context) => {
        const stream = context.choices.pick(streams);
        const content = context.choices
          .pick(streamMutators(stream.path))
          .apply(stream.content, context);
        if (!content) return false;
        stream.content = content;
        return true;
      }),
    },
    {
      name: 'cfb.drop-stream',
      apply: withStreams((streams, { choices }) => {
        streams.splice(choices.below(streams.length), 1);
        return true;
      }),
    },
    {
      name: 'cfb.duplicate-stream',
      apply: withStreams((streams, { choices }) => {
        const stream = choices.pick(streams);
        streams.push({
          path: `${stream.path}${choices.pick(['2', ' ', '_'])}`,
          content: stream.content,
        });
        return true;
      }),
    },
    {
      name: 'cfb.rename-stream',
      apply: withStreams((streams, { choices }) => {
        const stream = choices.pick(streams);
        stream.path = choices.pick([
          'Macros/VBA/dir',
          '_VBA_PROJECT_CUR/VBA/dir',
          'ObjectPool/_1/\u0001Ole10Native',
          'MsoDataStore/x',
          '\u0005SummaryInformation',
          'Workbook',
          'WordDocument',
          'PowerPoint Document',
          choices.pick(streams).path,
        ]);
        return true;
      }),
    },
  ];
}

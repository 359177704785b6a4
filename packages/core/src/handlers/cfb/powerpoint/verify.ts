import { openCompoundFile } from '../../../_internal/cfb-reader.ts';
import { Rejection } from '../../../_internal/rejection.ts';
import type { MetafileLimits } from '../../image/metafile/types.ts';
import type { EngineContext, HandlerOutput } from '../../types.ts';
import { VerifyFailure } from '../../types.ts';
import { checkBlip, isBlipType } from '../office-art.ts';
import { parseCurrentUser, readCurrentEdit } from './persist.ts';
import { readRecord, RT, walkRecords } from './records.ts';
import { removalOf } from './screen.ts';
import { CURRENT_USER_STREAM, DOCUMENT_STREAM, PICTURES_STREAM } from './rebuild.ts';

const KEPT_STREAMS: ReadonlySet<string> = new Set([
  CURRENT_USER_STREAM,
  DOCUMENT_STREAM,
  PICTURES_STREAM,
]);

/**
 * PowerPoint checks of verify before release. The written compound file is re-read by the strict
 * compound-file reader, which shares nothing with the writer but the tree it reads into: it holds the `Current User`, `PowerPoint Document`
 * and at most a `Pictures` stream and nothing else; the presentation is a single edit (no older
 * edit to hide an object in); its stream is exactly the persist objects the directory names
 * followed by the directory and the edit, with no byte between or after; every object is a
 * slide, master, notes, handout or document container; and no record in them runs, embeds or
 * fetches anything (see `screen.ts`).
 */
export function verifyPowerPointBinary(
  output: HandlerOutput,
  context: EngineContext,
): Promise<void> {
  return Promise.resolve().then(() => {
    try {
      check(output.bytes, context.limits);
    } catch (error) {
      if (error instanceof Rejection) throw new VerifyFailure('ppt.structure', error.message);
      throw error;
    }
  });
}

function check(bytes: Uint8Array, limits: MetafileLimits): void {
  const file = openCompoundFile(bytes, 'the written presentation');
  // Every entry under the root must be a kept stream: no storage, nothing else.
  const extra = [...file.topLevel]
    .filter(([name, node]) => !KEPT_STREAMS.has(name) || node.kind !== 'stream')
    .map(([name]) => name);
  if (extra.length > 0) {
    throw new VerifyFailure(
      'ppt.entries',
      `the written presentation holds more than its streams: ${extra.join(', ')}`,
    );
  }
  const content = (name: string): Uint8Array => {
    const node = file.topLevel.get(name);
    if (node?.kind !== 'stream') {
      throw new VerifyFailure('ppt.entries', `the written presentation lacks ${name}`);
    }
    return node.content;
  };
  const stream = content(DOCUMENT_STREAM);
  const user = parseCurrentUser(content(CURRENT_USER_STREAM));
  const edit = readCurrentEdit(stream, user.offsetToCurrentEdit);
  if (edit.edits !== 1) {
    throw new VerifyFailure('ppt.single-edit', 'the written presentation has more than one edit');
  }
  const objectOffsets = new Set(edit.directory.values());
  let objects = 0;
  for (let offset = 0; offset < stream.length;) {
    const record = readRecord(stream, offset, stream.length);
    if (objectOffsets.has(offset)) {
      if (
        ![RT.document, RT.mainMaster, RT.slide, RT.notes, RT.handout].some(
          (type) => type === record.recType,
        )
      ) {
        throw new VerifyFailure(
          'ppt.persist',
          `a persist object at ${offset} is of type 0x${record.recType.toString(16)}`,
        );
      }
      objects += 1;
      walkRecords(stream, record, (inner) => {
        const removal = removalOf(stream, inner);
        if (removal !== undefined) {
          throw new VerifyFailure('ppt.active', `the written presentation holds ${removal.what}`);
        }
      });
    } else if (record.recType !== RT.persistDirectoryAtom && record.recType !== RT.userEditAtom) {
      throw new VerifyFailure('ppt.layout', `a record at ${offset} is no persist object`);
    }
    offset = record.end;
  }
  if (objects !== objectOffsets.size) {
    throw new VerifyFailure('ppt.layout', 'a persist directory entry points inside another record');
  }
  if (file.topLevel.has(PICTURES_STREAM)) checkPictures(content(PICTURES_STREAM), limits);
}

/**
 * The `Pictures` stream is OfficeArtBlip records end to end ([MS-ODRAW] 2.2.23), nothing else,
 * each a picture the rebuild wrote ({@link checkBlip}).
 */
function checkPictures(pictures: Uint8Array, limits: MetafileLimits): void {
  for (let offset = 0; offset < pictures.length;) {
    const record = readRecord(pictures, offset, pictures.length);
    if (!isBlipType(record.recType)) {
      throw new VerifyFailure(
        'ppt.pictures',
        `the Pictures stream holds a record of type 0x${record.recType.toString(16)}`,
      );
    }
    const fault = checkBlip(pictures, record, limits);
    if (fault !== undefined) {
      throw new VerifyFailure('ppt.pictures', `the Pictures stream holds ${fault}`);
    }
    offset = record.end;
  }
}

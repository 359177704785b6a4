import { u16le, u32le } from '../../../_internal/bytes.ts';
import { Rejection } from '../../../_internal/rejection.ts';
import { RECORD_HEADER_BYTES } from '../office-art.ts';
import { readRecord, RT } from './records.ts';

/** [MS-PPT] 2.3.2 CurrentUserAtom.headerToken of a presentation that is not encrypted. */
export const PLAIN_HEADER_TOKEN = 0xe391c05f;
/** [MS-PPT] 2.3.2 CurrentUserAtom.headerToken of an encrypted presentation. */
export const ENCRYPTED_HEADER_TOKEN = 0xf3d1c4df;
/** [MS-PPT] 2.3.2: the fixed part of a CurrentUserAtom before `ansiUserName`. */
const CURRENT_USER_FIXED_BYTES = 0x14;
/** [MS-PPT] 2.3.3 UserEditAtom body without and with `encryptSessionPersistIdRef`. */
const USER_EDIT_BYTES = 0x1c;
const USER_EDIT_ENCRYPTED_BYTES = 0x20;
/**
 * Edits followed back from the current one. Each fast save appends one; PowerPoint offers a full
 * save long before a few hundred. The chain must also run strictly backwards, so it cannot cycle.
 */
export const MAX_USER_EDITS = 1024;
/** [MS-PPT] 2.3.4 PersistDirectoryEntry: 20-bit `persistId`, 12-bit `cPersist`. */
const PERSIST_ID_MASK = 0xfffff;
const PERSIST_COUNT_SHIFT = 20;

const WHAT = 'the PowerPoint presentation';

/** What the `Current User` stream says ([MS-PPT] 2.3.2), as far as the rebuild needs it. */
export interface CurrentUser {
  readonly offsetToCurrentEdit: number;
  /** [MS-PPT] 2.3.2 `relVersion`: 8, or 9 for files PowerPoint 2000 and later wrote. */
  readonly relVersion: number;
}

/** The newest UserEditAtom's fields the rebuild carries into its single edit. */
export interface CurrentEdit {
  readonly lastSlideIdRef: number;
  readonly version: number;
  readonly minorVersion: number;
  readonly majorVersion: number;
  readonly docPersistIdRef: number;
  readonly persistIdSeed: number;
  readonly lastView: number;
  /**
   * The live persist objects: persist id to stream offset, built by walking the edits newest
   * first, a newer edit's entry shadowing every older one for the same id ([MS-PPT] 2.1.2).
   */
  readonly directory: ReadonlyMap<number, number>;
  /** Edits in the chain, the current one included. */
  readonly edits: number;
}

/**
 * Reads the `Current User` stream ([MS-PPT] 2.3.2).
 * @throws {Rejection} `password_protected` for the encrypted header token; `invalid_file` when
 *   the atom is malformed.
 */
export function parseCurrentUser(bytes: Uint8Array): CurrentUser {
  const atom = readRecord(bytes, 0, bytes.length);
  if (atom.recType !== RT.currentUserAtom || atom.end - atom.body < CURRENT_USER_FIXED_BYTES) {
    throw new Rejection(
      'invalid_file',
      `${WHAT} has no CurrentUserAtom in its Current User stream`,
    );
  }
  const token = u32le(bytes, atom.body + 4);
  if (token === ENCRYPTED_HEADER_TOKEN) {
    throw new Rejection(
      'password_protected',
      `${WHAT} is encrypted ([MS-PPT] CryptSession10Container); it cannot be opened without its password`,
    );
  }
  if (token !== PLAIN_HEADER_TOKEN) {
    throw new Rejection(
      'invalid_file',
      `${WHAT}'s CurrentUserAtom has an unknown header token (not a PowerPoint 97-2003 file)`,
    );
  }
  const lenUserName = u16le(bytes, atom.body + 12);
  const relVersionAt = atom.body + CURRENT_USER_FIXED_BYTES + lenUserName;
  const relVersion = relVersionAt + 4 <= atom.end ? u32le(bytes, relVersionAt) : 8;
  return {
    offsetToCurrentEdit: u32le(bytes, atom.body + 8),
    relVersion: relVersion === 9 ? 9 : 8,
  };
}

/**
 * Follows the edit chain of the `PowerPoint Document` stream from the current edit back through
 * `offsetLastEdit` ([MS-PPT] 2.3.3), merging the persist directories ([MS-PPT] 2.3.4) newest
 * first: an object an older edit wrote and a newer one replaced is never live.
 * @throws {Rejection} `invalid_file` for an edit or directory that is malformed, out of range or
 *   runs forwards (a cycle); `password_protected` when an edit names an encryption session;
 *   `policy_violation` past {@link MAX_USER_EDITS}.
 */
export function readCurrentEdit(stream: Uint8Array, offsetToCurrentEdit: number): CurrentEdit {
  const directory = new Map<number, number>();
  let current: Omit<CurrentEdit, 'directory' | 'edits'> | undefined;
  let edits = 0;
  for (let offset = offsetToCurrentEdit, previous = Infinity; ; edits += 1) {
    if (edits >= MAX_USER_EDITS) {
      throw new Rejection(
        'policy_violation',
        `${WHAT} chains more than ${MAX_USER_EDITS} incremental saves`,
      );
    }
    if (offset >= previous) {
      throw new Rejection('invalid_file', `${WHAT}'s edit chain does not run backwards (a cycle)`);
    }
    const atom = readRecord(stream, offset, stream.length);
    const size = atom.end - atom.body;
    if (
      atom.recType !== RT.userEditAtom ||
      (size !== USER_EDIT_BYTES && size !== USER_EDIT_ENCRYPTED_BYTES)
    ) {
      throw new Rejection('invalid_file', `${WHAT} has no UserEditAtom at offset ${offset}`);
    }
    if (size === USER_EDIT_ENCRYPTED_BYTES && u32le(stream, atom.body + 28) !== 0) {
      throw new Rejection(
        'password_protected',
        `${WHAT} is encrypted ([MS-PPT] CryptSession10Container); it cannot be opened without its password`,
      );
    }
    current ??= {
      lastSlideIdRef: u32le(stream, atom.body),
      version: u16le(stream, atom.body + 4),
      minorVersion: stream[atom.body + 6] ?? 0,
      majorVersion: stream[atom.body + 7] ?? 0,
      docPersistIdRef: u32le(stream, atom.body + 16),
      persistIdSeed: u32le(stream, atom.body + 20),
      lastView: u16le(stream, atom.body + 24),
    };
    readDirectory(stream, u32le(stream, atom.body + 12), directory);
    const offsetLastEdit = u32le(stream, atom.body + 8);
    if (offsetLastEdit === 0) return { ...current, directory, edits: edits + 1 };
    previous = offset;
    offset = offsetLastEdit;
  }
}

/** Adds the entries of the PersistDirectoryAtom at `offset` that no newer edit has set. */
function readDirectory(stream: Uint8Array, offset: number, directory: Map<number, number>): void {
  const atom = readRecord(stream, offset, stream.length);
  if (atom.recType !== RT.persistDirectoryAtom) {
    throw new Rejection('invalid_file', `${WHAT} has no PersistDirectoryAtom at offset ${offset}`);
  }
  // Each entry is at least 4 bytes, so the loop ends within the atom's length / 4 turns.
  for (let at = atom.body; at < atom.end;) {
    if (at + 4 > atom.end) throw directoryFault(offset);
    const entry = u32le(stream, at);
    const persistId = entry & PERSIST_ID_MASK;
    const count = entry >>> PERSIST_COUNT_SHIFT;
    at += 4;
    if (persistId === 0 || at + count * 4 > atom.end) throw directoryFault(offset);
    for (let index = 0; index < count; index += 1, at += 4) {
      const target = u32le(stream, at);
      if (target + RECORD_HEADER_BYTES > stream.length) throw directoryFault(offset);
      if (!directory.has(persistId + index)) directory.set(persistId + index, target);
    }
  }
}

function directoryFault(offset: number): Rejection {
  return new Rejection(
    'invalid_file',
    `${WHAT}'s persist directory at offset ${offset} is malformed or points past the stream`,
  );
}

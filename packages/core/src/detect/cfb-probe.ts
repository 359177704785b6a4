import { openCompoundFile } from '../_internal/cfb-reader.ts';
import type { CompoundFile } from '../_internal/cfb-reader.ts';
import { u16le, u32le } from '../_internal/bytes.ts';

/** What a compound file holds, told by its top-level streams. */
export type CompoundKind =
  'word-binary' | 'excel-binary' | 'powerpoint-binary' | 'encrypted-ooxml' | 'other';

/**
 * Classifies a compound file: [MS-DOC] 2.1 `WordDocument`, [MS-XLS] 2.1.2 `Workbook` (BIFF8) or
 * `Book` (BIFF5/7), [MS-PPT] 2.1.1 `PowerPoint Document`, and [MS-OFFCRYPTO] 2.3.4 an encrypted
 * OOXML package (`EncryptionInfo` + `EncryptedPackage`).
 */
export function probeCompoundFile(bytes: Uint8Array, what: string): CompoundKind {
  return classifyCompoundFile(openCompoundFile(bytes, what));
}

/** {@link probeCompoundFile} for a compound file already open. */
export function classifyCompoundFile({ topLevel }: CompoundFile): CompoundKind {
  if (topLevel.has('EncryptedPackage')) return 'encrypted-ooxml';
  if (topLevel.has('WordDocument')) return 'word-binary';
  if (topLevel.has('Workbook') || topLevel.has('Book')) return 'excel-binary';
  if (topLevel.has('PowerPoint Document')) return 'powerpoint-binary';
  return 'other';
}

/** [MS-DOC] 2.5.2 FibBase: `wIdent` of a Word binary file, and the `fEncrypted` bit. */
const WORD_IDENT = 0xa5ec;
const FIB_ENCRYPTED = 0x0100;
/** [MS-XLS] 2.4.117 FILEPASS, 2.4.21 BOF and 2.4.103 EOF record types. */
const XLS_FILEPASS = 0x002f;
const XLS_BOF = 0x0809;
const XLS_EOF = 0x000a;
/** Records read from the workbook globals before giving up on finding FILEPASS. */
const MAX_XLS_RECORDS = 100_000;
/** [MS-PPT] 2.3.2 CurrentUserAtom.headerToken of an encrypted presentation. */
const PPT_ENCRYPTED_TOKEN = 0xf3d1c4df;

/**
 * Why a Word, Excel or PowerPoint 97-2003 file cannot be opened without a password, or
 * `undefined` when it can. Word: `FibBase.fEncrypted` (RC4 or XOR obfuscation, [MS-DOC] 2.5.2).
 * Excel: a FILEPASS record in the workbook globals ([MS-XLS] 2.4.117); a workbook encrypted with
 * Excel's built-in default password "VelvetSweatshop" (it opens without a prompt) is treated the
 * same: the engine does not decrypt, and an encrypted stream cannot be rebuilt. PowerPoint: the
 * CurrentUserAtom's encrypted header token ([MS-PPT] 2.3.2) or an `EncryptedSummary` stream
 * ([MS-PPT] 2.1.3, CryptSession10Container, 2.3.7).
 */
export function compoundEncryption(file: CompoundFile, kind: CompoundKind): string | undefined {
  switch (kind) {
    case 'word-binary': {
      const fib = streamOf(file, 'WordDocument');
      if (!fib || fib.length < 12 || u16le(fib, 0) !== WORD_IDENT) return undefined;
      return (u16le(fib, 10) & FIB_ENCRYPTED) !== 0
        ? 'the Word document is encrypted ([MS-DOC] FibBase.fEncrypted); it cannot be opened without its password'
        : undefined;
    }
    case 'excel-binary': {
      const stream = streamOf(file, 'Workbook') ?? streamOf(file, 'Book');
      return stream && hasFilePass(stream)
        ? 'the Excel workbook is encrypted ([MS-XLS] FILEPASS); it cannot be opened without its password'
        : undefined;
    }
    case 'powerpoint-binary': {
      const user = streamOf(file, 'Current User');
      const token = user && user.length >= 16 ? u32le(user, 12) : undefined;
      return token === PPT_ENCRYPTED_TOKEN || file.topLevel.has('EncryptedSummary')
        ? 'the PowerPoint presentation is encrypted ([MS-PPT] CryptSession10Container); it cannot be opened without its password'
        : undefined;
    }
    case 'encrypted-ooxml':
    case 'other':
      return undefined;
  }
}

function streamOf(file: CompoundFile, name: string): Uint8Array | undefined {
  const entry = file.topLevel.get(name);
  return entry?.kind === 'stream' ? entry.content : undefined;
}

/** [MS-XLS] 2.1.4: FILEPASS, when present, follows the globals' BOF before their EOF. */
function hasFilePass(stream: Uint8Array): boolean {
  let offset = 0;
  for (let count = 0; count < MAX_XLS_RECORDS && offset + 4 <= stream.length; count += 1) {
    const type = u16le(stream, offset);
    if (count === 0 && type !== XLS_BOF && type !== 0x0209 && type !== 0x0409) return false;
    if (type === XLS_FILEPASS) return true;
    if (type === XLS_EOF) return false;
    offset += 4 + u16le(stream, offset + 2);
  }
  return false;
}

import { openCompoundFile } from '../_internal/cfb-reader.ts';

/** What a compound file holds, told by its top-level streams. */
export type CompoundKind =
  'word-binary' | 'excel-binary' | 'powerpoint-binary' | 'encrypted-ooxml' | 'other';

/**
 * Classifies a compound file: [MS-DOC] 2.1 `WordDocument`, [MS-XLS] 2.1.2 `Workbook` (BIFF8) or
 * `Book` (BIFF5/7), [MS-PPT] 2.1.1 `PowerPoint Document`, and [MS-OFFCRYPTO] 2.3.4 an encrypted
 * OOXML package (`EncryptionInfo` + `EncryptedPackage`).
 */
export function probeCompoundFile(bytes: Uint8Array, what: string): CompoundKind {
  const { topLevel } = openCompoundFile(bytes, what);
  if (topLevel.has('EncryptedPackage')) return 'encrypted-ooxml';
  if (topLevel.has('WordDocument')) return 'word-binary';
  if (topLevel.has('Workbook') || topLevel.has('Book')) return 'excel-binary';
  if (topLevel.has('PowerPoint Document')) return 'powerpoint-binary';
  return 'other';
}

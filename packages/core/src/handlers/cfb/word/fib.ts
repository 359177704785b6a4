import { u16le, u32le } from '../../../_internal/bytes.ts';
import { Rejection } from '../../../_internal/rejection.ts';

/** [MS-DOC] 2.5.2 FibBase.wIdent of a Word binary document. */
const WORD_IDENT = 0xa5ec;
/** The wIdent of Word 6 and Word 95 documents, whose FIB is another format. */
const WORD_6_IDENT = 0xa5dc;
/** [MS-DOC] 2.5.2: nFib of Word 97, the first version this format ([MS-DOC]) describes. */
export const WORD_97_NFIB = 0x00c1;
/** [MS-DOC] 2.5.2 FibBase flag bits (the 16 bits at offset 10). */
const FIB_ENCRYPTED = 0x0100;
const FIB_WHICH_TABLE = 0x0200;
/** [MS-DOC] 2.5.1: csw and cslw of every Word 97 and later FIB. */
const FIB_RG_W_COUNT = 0x000e;
const FIB_RG_LW_COUNT = 0x0016;
/** Offset of FibRgLw97 inside the FIB: FibBase (32), csw (2), FibRgW97 (28), cslw (2). */
const FIB_RG_LW_OFFSET = 64;
/** Pairs in FibRgFcLcb; [MS-DOC] 2.5.1 allows 0x5D (Word 97) up to 0xB7 (Word 2007). */
const MIN_FC_LCB_PAIRS = 0x5d;
const MAX_FC_LCB_PAIRS = 0xb7;

/**
 * [MS-DOC] 2.5.5 FibRgFcLcb97: the index of each offset/size pair this rebuild reads or clears.
 * Every pair names a structure in the table stream.
 */
export const FC_LCB = {
  /** Character formatting: the pages (ChpxFkp) of the text's character properties. */
  plcfBteChpx: 12,
  plcfFldMom: 16,
  plcfFldHdr: 17,
  plcfFldFtn: 18,
  plcfFldAtn: 19,
  plcfFldMcr: 20,
  /** Customizations: toolbars, menus and key bindings that run macros (2.9.61 Tcg). */
  cmds: 24,
  /** Word 1/2 macro descriptors and names, still read by later versions. */
  plcMcr: 25,
  sttbfMcr: 26,
  sttbfAssoc: 32,
  clx: 33,
  /** The path of the file Word autosaved this document from. */
  autosaveSource: 35,
  plcfFldEdn: 48,
  /** The drawings (OfficeArtContent, 2.9.172): shapes and the BLIP store of floating pictures. */
  dggInfo: 50,
  plcfFldTxbx: 57,
  plcfFldHdrTxbx: 59,
  /** Mail routing slip: recipients and subject. */
  routeSlip: 70,
  /** Who saved the document where (the last ten authors and paths). */
  sttbSavedBy: 71,
} as const;

/** What this rebuild reads from a Word 97-2003 FIB. */
export interface Fib {
  readonly nFib: number;
  readonly flags: number;
  /** `1Table` or `0Table` ([MS-DOC] 2.5.2 fWhichTblStm). */
  readonly tableName: '0Table' | '1Table';
  /** [MS-DOC] 2.5.4 FibRgLw97: text lengths of the main document and each sub-document, in CPs. */
  readonly ccp: readonly number[];
  /** Offset in the WordDocument stream of FibRgFcLcbBlob. */
  readonly fcLcbOffset: number;
  readonly fcLcbCount: number;
}

/**
 * Reads the FIB at the start of a `WordDocument` stream.
 * @throws {Rejection} `invalid_file` for a file that is not Word 97-2003 (Word 6 and 95 FIBs
 *   included: their structures are another format); `password_protected` when encrypted.
 */
export function parseFib(stream: Uint8Array, what: string): Fib {
  const invalid = (fault: string): never => {
    throw new Rejection('invalid_file', `${what} is not a Word 97-2003 document: ${fault}`);
  };
  if (stream.length >= 4 && u16le(stream, 0) === WORD_6_IDENT) {
    invalid('it is a Word 6 or Word 95 document, which this engine does not rebuild');
  }
  if (
    stream.length < FIB_RG_LW_OFFSET + FIB_RG_LW_COUNT * 4 + 2 ||
    u16le(stream, 0) !== WORD_IDENT
  ) {
    invalid('its WordDocument stream does not start with a FIB ([MS-DOC] 2.5.2 wIdent)');
  }
  const nFib = u16le(stream, 2);
  if (nFib < WORD_97_NFIB) {
    invalid(`its FIB version ${nFib} is Word 6 or Word 95, which this engine does not rebuild`);
  }
  const flags = u16le(stream, 10);
  if ((flags & FIB_ENCRYPTED) !== 0) {
    throw new Rejection(
      'password_protected',
      'the Word document is encrypted ([MS-DOC] FibBase.fEncrypted); it cannot be opened without its password',
    );
  }
  if (u16le(stream, 32) !== FIB_RG_W_COUNT || u16le(stream, 62) !== FIB_RG_LW_COUNT) {
    invalid('its FIB counts (csw, cslw) are not those of Word 97 and later');
  }
  const countOffset = FIB_RG_LW_OFFSET + FIB_RG_LW_COUNT * 4;
  const fcLcbCount = u16le(stream, countOffset);
  if (fcLcbCount < MIN_FC_LCB_PAIRS || fcLcbCount > MAX_FC_LCB_PAIRS) {
    invalid(`its FIB has ${fcLcbCount} offset/size pairs`);
  }
  const fcLcbOffset = countOffset + 2;
  if (fcLcbOffset + fcLcbCount * 8 > stream.length) invalid('its FIB runs past the stream');
  // [MS-DOC] 2.5.4: ccpText, ccpFtn, ccpHdd, reserved (ccpMcr), ccpAtn, ccpEdn, ccpTxbx, ccpHdrTxbx.
  const ccp = [3, 4, 5, 6, 7, 8, 9, 10].map((i) => u32le(stream, FIB_RG_LW_OFFSET + i * 4));
  return {
    nFib,
    flags,
    tableName: (flags & FIB_WHICH_TABLE) !== 0 ? '1Table' : '0Table',
    ccp,
    fcLcbOffset,
    fcLcbCount,
  };
}

/** The offset and size of FibRgFcLcb pair `index`. */
export function fcLcb(stream: Uint8Array, fib: Fib, index: number): { fc: number; lcb: number } {
  const offset = fib.fcLcbOffset + index * 8;
  return { fc: u32le(stream, offset), lcb: u32le(stream, offset + 4) };
}

/** Sets the size of pair `index` to 0: the structure is absent ([MS-DOC] 2.5.5). */
export function clearFcLcb(stream: Uint8Array, fib: Fib, index: number): void {
  new DataView(stream.buffer, stream.byteOffset).setUint32(
    fib.fcLcbOffset + index * 8 + 4,
    0,
    true,
  );
}

/** Points pair `index` at `lcb` bytes from `fc`. */
export function setFcLcb(
  stream: Uint8Array,
  fib: Fib,
  index: number,
  range: { fc: number; lcb: number },
): void {
  const view = new DataView(stream.buffer, stream.byteOffset);
  view.setUint32(fib.fcLcbOffset + index * 8, range.fc, true);
  view.setUint32(fib.fcLcbOffset + index * 8 + 4, range.lcb, true);
}

import { u16le, u32le } from '../../../_internal/bytes.ts';
import { Rejection } from '../../../_internal/rejection.ts';
import { FC_LCB, fcLcb } from './fib.ts';
import type { Fib } from './fib.ts';

/** [MS-DOC] 2.9.42 ChpxFkp: a 512-byte page of the WordDocument stream. */
const FKP_BYTES = 512;
/** [MS-DOC] 2.9.42: crun is at most 0x65 runs per page. */
const MAX_FKP_RUNS = 0x65;
/** [MS-DOC] 2.9.14 PnFkpChpx: the low 22 bits are the page number. */
const PN_MASK = 0x3fffff;
/** [MS-DOC] 2.2.5.1 Sprm.spra: the operand size of each sprm kind; 6 is variable. */
const SPRA_OPERAND_BYTES = [1, 1, 2, 4, 2, 2, -1, 3] as const;
const SPRA_VARIABLE = 6;
/** [MS-DOC] 2.6.4 sprmTDefTable: the one variable sprm whose size takes two bytes. */
const SPRM_T_DEF_TABLE = 0xd608;

/** [MS-DOC] 2.6.1 character sprms read or written by the rebuild. */
export const SPRM = {
  /** The character is an OLE object (its storage in ObjectPool). */
  cFOle2: 0x080a,
  /** The character is an embedded object's field separator. */
  cFObj: 0x0856,
  /** The character is special: a picture (U+0001), a field mark, a footnote reference. */
  cFSpec: 0x0855,
  /** sprmCPicLocation points at NilPICFAndBinData (form field or hyperlink data), not a picture. */
  cFData: 0x0806,
  /** The Data stream offset of the character's picture or data (or an OLE object's name). */
  cPicLocation: 0x6a03,
} as const;

/** One property of a grpprl: its sprm and where its operand lies in the WordDocument stream. */
export interface Sprm {
  readonly sprm: number;
  readonly operand: number;
}

/**
 * The grpprl of every Chpx the character formatting pages hold ([MS-DOC] 2.8.5 PlcBteChpx →
 * 2.9.42 ChpxFkp → 2.9.39 Chpx), each once, as `[start, end)` in the WordDocument stream. The
 * pages cover the text of the main document and of every sub-document.
 * @throws {Rejection} `invalid_file` for a formatting table or page that does not fit its stream.
 */
export function characterGrpprls(
  word: Uint8Array,
  table: Uint8Array,
  fib: Fib,
  what: string,
): { start: number; end: number }[] {
  const invalid = (fault: string): never => {
    throw new Rejection('invalid_file', `${what} is not a readable Word document: ${fault}`);
  };
  const { fc, lcb } = fcLcb(word, fib, FC_LCB.plcfBteChpx);
  if (lcb === 0) return [];
  // [MS-DOC] 2.8.5 PlcBteChpx: n + 1 FCs, then n four-byte PnFkpChpx.
  if (fc + lcb > table.length || lcb < 12 || (lcb - 4) % 8 !== 0) {
    invalid('its character formatting table (PlcBteChpx) does not fit the table stream');
  }
  const count = (lcb - 4) / 8;
  const seen = new Set<number>();
  const grpprls: { start: number; end: number }[] = [];
  for (let i = 0; i < count; i += 1) {
    const page = (u32le(table, fc + (count + 1) * 4 + i * 4) & PN_MASK) * FKP_BYTES;
    if (page + FKP_BYTES > word.length) {
      invalid('a page of its character formatting lies outside the WordDocument stream');
    }
    const runs = word[page + FKP_BYTES - 1] ?? 0;
    if (runs > MAX_FKP_RUNS) invalid(`a character formatting page holds ${runs} runs`);
    for (let run = 0; run < runs; run += 1) {
      // [MS-DOC] 2.9.42: rgb holds the Chpx's offset in the page in 2-byte words; 0 is none.
      const at = (word[page + (runs + 1) * 4 + run] ?? 0) * 2;
      if (at === 0 || seen.has(page + at)) continue;
      seen.add(page + at);
      const size = word[page + at] ?? 0;
      if (at + 1 + size > FKP_BYTES - 1) invalid('a character formatting run overflows its page');
      grpprls.push({ start: page + at + 1, end: page + at + 1 + size });
    }
  }
  return grpprls;
}

/** The properties of the grpprl `word[start, end)`, in order. */
export function sprmsOf(word: Uint8Array, { start, end }: { start: number; end: number }): Sprm[] {
  const sprms: Sprm[] = [];
  let offset = start;
  while (offset + 2 <= end) {
    const sprm = u16le(word, offset);
    offset += 2;
    const spra = sprm >>> 13;
    let operand: number = SPRA_OPERAND_BYTES[spra] ?? 1;
    if (spra === SPRA_VARIABLE) {
      operand = sprm === SPRM_T_DEF_TABLE ? u16le(word, offset) + 2 : (word[offset] ?? 0) + 1;
    }
    // A grpprl whose last operand runs past it ends there, as Word reads it.
    if (offset + operand > end) break;
    sprms.push({ sprm, operand: offset });
    offset += operand;
  }
  return sprms;
}

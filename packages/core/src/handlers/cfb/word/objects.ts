import { u16le, u32le } from '../../../_internal/bytes.ts';
import type { CompoundNode, CompoundStorage } from '../../../_internal/cfb/tree.ts';
import { Rejection, ThreatReport } from '../../../_internal/rejection.ts';
import type { FindingTally } from '../../../findings.ts';
import type { EngineContext } from '../../types.ts';
import { FC_LCB, fcLcb } from './fib.ts';
import type { Fib } from './fib.ts';

/** [MS-DOC] 2.4.1: the storage that holds each embedded or linked object's own storage. */
export const OBJECT_POOL = 'ObjectPool';
/** [MS-DOC] 2.9.42 ChpxFkp: a 512-byte page of the WordDocument stream. */
const FKP_BYTES = 512;
/** [MS-DOC] 2.9.42: crun is at most 0x65 runs per page. */
const MAX_FKP_RUNS = 0x65;
/** [MS-DOC] 2.9.14 PnFkpChpx: the low 22 bits are the page number. */
const PN_MASK = 0x3fffff;
/** [MS-DOC] 2.6.1 sprmCFOle2: the character is an OLE object (its storage in ObjectPool). */
const SPRM_C_F_OLE2 = 0x080a;
/** [MS-DOC] 2.6.1 sprmCFObj: the character is an embedded object's field separator. */
const SPRM_C_F_OBJ = 0x0856;
/** [MS-DOC] 2.2.5.1 Sprm.spra: the operand size of each sprm kind; 6 is variable. */
const SPRA_OPERAND_BYTES = [1, 1, 2, 4, 2, 2, -1, 3] as const;
const SPRA_VARIABLE = 6;
/** [MS-DOC] 2.6.4 sprmTDefTable: the one variable sprm whose size takes two bytes. */
const SPRM_T_DEF_TABLE = 0xd608;

/**
 * Walks the character formatting of the main text ([MS-DOC] 2.8.5 PlcBteChpx → 2.9.42 ChpxFkp
 * → 2.9.39 Chpx) and finds every property that makes a character an OLE object: `sprmCFOle2`
 * and `sprmCFObj` set to 1. With `apply`, each is set to 0 where it is, the same size, so no
 * offset moves: the field result's picture character ([MS-DOC] 2.9.158 PICFAndOfficeArtData in
 * the Data stream) is then a plain picture, shown where the object was.
 * @param word the WordDocument stream, changed in place when `apply`.
 * @returns how many OLE properties were set.
 * @throws {Rejection} `invalid_file` for a formatting table or page that does not fit its stream.
 */
export function clearObjectCharacters(
  word: Uint8Array,
  table: Uint8Array,
  fib: Fib,
  what: string,
  apply: boolean,
): number {
  const invalid = (fault: string): never => {
    throw new Rejection('invalid_file', `${what} is not a readable Word document: ${fault}`);
  };
  const { fc, lcb } = fcLcb(word, fib, FC_LCB.plcfBteChpx);
  if (lcb === 0) return 0;
  // [MS-DOC] 2.8.5 PlcBteChpx: n + 1 FCs, then n four-byte PnFkpChpx.
  if (fc + lcb > table.length || lcb < 12 || (lcb - 4) % 8 !== 0) {
    invalid('its character formatting table (PlcBteChpx) does not fit the table stream');
  }
  const count = (lcb - 4) / 8;
  let set = 0;
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
      if (at === 0) continue;
      const size = word[page + at] ?? 0;
      if (at + 1 + size > FKP_BYTES - 1) invalid('a character formatting run overflows its page');
      set += clearOleSprms(word, page + at + 1, page + at + 1 + size, apply);
    }
  }
  return set;
}

/** Sets sprmCFOle2 and sprmCFObj operands in `word[start, end)` (a grpprl) to 0. */
function clearOleSprms(word: Uint8Array, start: number, end: number, apply: boolean): number {
  let set = 0;
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
    if ((sprm === SPRM_C_F_OLE2 || sprm === SPRM_C_F_OBJ) && word[offset] !== 0) {
      set += 1;
      if (apply) word[offset] = 0;
    }
    offset += operand;
  }
  return set;
}

/**
 * Scans every stream of every object in `ObjectPool` (a package's `\x01Ole10Native`, a
 * document's own streams) with the engine's scanners before the storage is dropped, and records
 * one `embedded-object` finding per object, located at `ObjectPool/_NNNN`.
 * @throws {Rejection} `threat_detected` naming the stream a threat was found in.
 */
export async function scanObjectPool(
  pool: CompoundStorage,
  bytes: Uint8Array,
  context: EngineContext,
  findings: FindingTally,
): Promise<void> {
  const threats = new ThreatReport();
  const scan = async (node: CompoundNode, path: string): Promise<void> => {
    context.deadline.check();
    if (node.kind === 'stream') {
      const found = await context.scanMember({ bytes: node.content, fileName: path }, bytes);
      threats.add(found, `stream "${path}"`);
      return;
    }
    for (const child of node.children) await scan(child, `${path}/${printable(child.name)}`);
  };
  for (const object of pool.children) {
    const path = `${OBJECT_POOL}/${printable(object.name)}`;
    await scan(object, path);
    findings.at({ part: path }).add('embedded-object');
  }
  if (threats.size > 0) throw threats.toRejection('the file');
}

/**
 * An entry name as a detail or location shows it: [MS-OLEDS] names such as `\x01Ole10Native`
 * start with a control character, written as its escape.
 */
function printable(name: string): string {
  return Array.from(name, (char) => {
    const code = char.charCodeAt(0);
    return code < 0x20 || code === 0x7f ? `\\x${code.toString(16).padStart(2, '0')}` : char;
  }).join('');
}

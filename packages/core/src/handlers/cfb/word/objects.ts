import type { CompoundNode, CompoundStorage } from '../../../_internal/cfb/tree.ts';
import { ThreatReport } from '../../../_internal/rejection.ts';
import type { FindingTally } from '../../../findings.ts';
import type { EngineContext } from '../../types.ts';
import { characterGrpprls, SPRM, sprmsOf } from './chpx.ts';
import type { Fib } from './fib.ts';

/** [MS-DOC] 2.4.1: the storage that holds each embedded or linked object's own storage. */
export const OBJECT_POOL = 'ObjectPool';

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
  let set = 0;
  for (const grpprl of characterGrpprls(word, table, fib, what)) {
    for (const { sprm, operand } of sprmsOf(word, grpprl)) {
      if ((sprm === SPRM.cFOle2 || sprm === SPRM.cFObj) && word[operand] !== 0) {
        set += 1;
        if (apply) word[operand] = 0;
      }
    }
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

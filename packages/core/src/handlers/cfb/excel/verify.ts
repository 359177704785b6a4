/**
 * Verify before release for rebuilt Excel 97-2003 workbooks: the written file is re-read by the
 * strict compound-file reader (which shares nothing with the writer but the tree it reads into)
 * and its record stream walked again.
 */
import { openCompoundFile } from '../../../_internal/cfb-reader.ts';
import { u32le } from '../../../_internal/bytes.ts';
import type { HandlerOutput } from '../../types.ts';
import { VerifyFailure } from '../../types.ts';
import { PTG_EXP, refusedBiffFormula } from './formulas.ts';
import {
  braiRefusal,
  isKeptHyperlink,
  isKeptRecord,
  nameRefusal,
  objectRefusal,
  SHEET_KIND,
  supbookRefusal,
} from './judge.ts';
import { RecordCursor, RT } from './records.ts';

/** Records verify judges one by one; every other record must be on the copied allowlist. */
const JUDGED_RECORDS: ReadonlySet<number> = new Set([
  RT.BOF,
  RT.EOF,
  RT.CONTINUE,
  RT.BOUNDSHEET8,
  RT.NAME,
  RT.SUPBOOK,
  RT.FORMULA,
  RT.SHRFMLA,
  RT.ARRAY,
  RT.OBJ,
  RT.HLINK,
  RT.BRAI,
]);

/**
 * Checks a rebuilt workbook: the compound file holds the `Workbook` stream and nothing else; the
 * stream opens with BIFF8 workbook globals; every record is on the allowlist or passes its rule
 * (no macro or VBA sheet, no auto-run or macro name, no external, DDE or OLE link, no formula that
 * calls code or fetches, no macro or OLE object, no hyperlink but http, https and mailto); every
 * BOUNDSHEET8 points at a BOF.
 * @throws {VerifyFailure} naming the check that failed.
 */
export function verifyExcelBinary(output: HandlerOutput): void {
  const { topLevel } = openCompoundFile(output.bytes, 'the rebuilt workbook');
  const names = [...topLevel.keys()];
  if (names.length !== 1 || names[0] !== 'Workbook') {
    throw new VerifyFailure('xls.streams', `the rebuilt workbook holds ${names.join(', ')}`);
  }
  const workbook = topLevel.get('Workbook');
  if (workbook?.kind !== 'stream') {
    throw new VerifyFailure('xls.streams', 'the rebuilt workbook has no Workbook stream');
  }
  const records = new RecordCursor(workbook.content);
  const { stream } = records;
  const fail = (detail: string): never => {
    throw new VerifyFailure('xls.records', `the rebuilt workbook stream ${detail}`);
  };
  const bofOffsets = new Set<number>();
  const sheetOffsets: number[] = [];
  while (records.next()) {
    const { type, offset } = records;
    if (records.end > stream.length) fail(`has a record at ${offset} running past its end`);
    if (
      offset === 0 &&
      (type !== RT.BOF || records.u16(0) !== 0x0600 || records.u16(2) !== 0x0005)
    ) {
      fail('does not open with BIFF8 workbook globals');
    }
    if (type === RT.BOF) bofOffsets.add(offset);
    if (!isKeptRecord(type) && !JUDGED_RECORDS.has(type))
      fail(`holds record 0x${type.toString(16)}`);
    const judged = judge(records);
    if (judged !== undefined) fail(`holds ${judged}`);
    if (type === RT.BOUNDSHEET8) sheetOffsets.push(u32le(records.data(), 0));
  }
  if (records.end !== stream.length) fail('ends inside a record header');
  for (const sheet of sheetOffsets) {
    if (!bofOffsets.has(sheet)) fail(`lists a sheet at ${sheet}, where no BOF starts`);
  }
}

/** What the current record holds that may not be released, or `undefined`. */
function judge(records: RecordCursor): string | undefined {
  switch (records.type) {
    case RT.BOUNDSHEET8: {
      const kind = records.byte(5);
      return kind === SHEET_KIND.macro || kind === SHEET_KIND.vbModule
        ? 'a macro sheet'
        : undefined;
    }
    case RT.NAME:
      // A NAME written long enough to need CONTINUE is judged on its first record's data.
      return nameRefusal(records.data()) ?? undefined;
    case RT.SUPBOOK:
      return supbookRefusal(records.data());
    case RT.FORMULA: {
      // The tokens read in place, within the record (see rebuild.ts).
      const start = records.dataAt + Math.min(22, records.size);
      const end = records.dataAt + Math.min(22 + records.u16(20), records.size);
      if (start < end && records.stream[start] === PTG_EXP) return undefined;
      return refusedBiffFormula(records.stream, undefined, start, end) === undefined
        ? undefined
        : 'a refused formula';
    }
    case RT.SHRFMLA:
      return refusedBiffFormula(records.data(10, 10 + records.u16(8))) === undefined
        ? undefined
        : 'a refused shared formula';
    case RT.ARRAY:
      return refusedBiffFormula(records.data(14, 14 + records.u16(12))) === undefined
        ? undefined
        : 'a refused array formula';
    case RT.OBJ:
      return objectRefusal(records.data()) ?? undefined;
    case RT.HLINK:
      return isKeptHyperlink(records.data()) ? undefined : 'a hyperlink to a refused target';
    case RT.BRAI:
      return braiRefusal(records.data());
    default:
      return undefined;
  }
}

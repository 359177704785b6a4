import CFB from 'cfb';

import { u16le } from '../../../_internal/bytes.ts';
import type { HandlerOutput } from '../../types.ts';
import { VerifyFailure } from '../../types.ts';
import { neutraliseFields } from './fields.ts';
import { FC_LCB, fcLcb, parseFib } from './fib.ts';

/** [MS-CFB] 2.6.1 object types; 0 is an unused directory entry. */
const CFB_UNUSED = 0;
const CFB_STREAM = 2;
const CFB_ROOT = 5;

/**
 * Word 97-2003 checks of verify before release. The written compound file is re-read with the
 * `cfb` package, independently of the engine's reader and writer: the root holds nothing but
 * `WordDocument`, the table stream the FIB names and `Data`, all of them streams; the FIB is a
 * Word 97 FIB; no field in the text has an instruction the rules refuse; the macro tables and
 * customisations are empty and the attached template is blank.
 */
export function verifyWordBinary(output: HandlerOutput): Promise<void> {
  let container: ReturnType<typeof CFB.read>;
  try {
    container = CFB.read(output.bytes, { type: 'buffer' });
  } catch (error) {
    throw new VerifyFailure(
      'cfb.container',
      `the written compound file cannot be read: ${String(error)}`,
    );
  }
  const streams = new Map<string, Uint8Array>();
  container.FileIndex.forEach((entry, index) => {
    if (entry.type === CFB_ROOT || entry.type === CFB_UNUSED) return;
    const path = container.FullPaths[index] ?? '';
    const parts = path.split('/').filter((part) => part.length > 0);
    if (entry.type !== CFB_STREAM || parts.length !== 2) {
      throw new VerifyFailure(
        'cfb.entries',
        `the written file holds "${path}", which is not a top-level stream`,
      );
    }
    const content = entry.content as Uint8Array | number[] | undefined;
    streams.set(
      parts[1] ?? '',
      content instanceof Uint8Array ? content : Uint8Array.from(content ?? []),
    );
  });
  const word = streams.get('WordDocument');
  if (!word) throw new VerifyFailure('cfb.entries', 'the written file has no WordDocument stream');
  const fib = parseFib(word, 'the written document');
  const table = streams.get(fib.tableName);
  const allowed = new Set(['WordDocument', fib.tableName, 'Data']);
  const extra = [...streams.keys()].filter((name) => !allowed.has(name));
  if (!table || extra.length > 0) {
    throw new VerifyFailure(
      'cfb.entries',
      `the written file holds ${extra.join(', ') || `no ${fib.tableName}`}`,
    );
  }
  if (neutraliseFields(word, table, fib, 'the written document', false).removed.length > 0) {
    throw new VerifyFailure(
      'word.fields',
      'a field in the written document still fetches, runs or links',
    );
  }
  for (const index of [FC_LCB.cmds, FC_LCB.plcMcr, FC_LCB.sttbfMcr]) {
    if (fcLcb(word, fib, index).lcb !== 0) {
      throw new VerifyFailure('word.macros', 'the written document still points at macro tables');
    }
  }
  const assoc = fcLcb(word, fib, FC_LCB.sttbfAssoc);
  for (let i = 0; assoc.lcb > 0 && i < 18; i += 1) {
    if (u16le(table, assoc.fc + 6 + i * 2) !== 0) {
      throw new VerifyFailure(
        'word.template',
        'the written document still names an attached template',
      );
    }
  }
  return Promise.resolve();
}

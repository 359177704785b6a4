import { u16le } from '../../../_internal/bytes.ts';
import { parseCompoundFile } from '../../../_internal/cfb/read.ts';
import { Rejection } from '../../../_internal/rejection.ts';
import type { EngineContext, HandlerOutput } from '../../types.ts';
import { VerifyFailure } from '../../types.ts';
import { neutraliseFields } from './fields.ts';
import { FC_LCB, fcLcb, parseFib } from './fib.ts';
import { clearObjectCharacters } from './objects.ts';

/**
 * Word 97-2003 checks of verify before release. The written compound file is read back from its
 * bytes by the strict reader (not by the writer that laid it out): every chain, the directory
 * and every stream must hold together; the root holds nothing but `WordDocument`, the table
 * stream the FIB names and `Data`, all of them streams; the FIB is a Word 97 FIB; no field in
 * the text has an instruction the rules refuse (EMBED and LINK included); no character is an
 * OLE object (`sprmCFOle2`, `sprmCFObj` in the character formatting pages); the macro tables and customisations are empty
 * and the attached template is blank. (The `cfb` package, the other reader at hand, accepts
 * broken chains and takes over a second on a 20 MB file; the tests judge outputs with it and
 * with python-olefile.)
 */
export function verifyWordBinary(output: HandlerOutput, context: EngineContext): Promise<void> {
  return Promise.resolve().then(() => {
    checkWordBinary(output, context);
  });
}

function checkWordBinary(output: HandlerOutput, context: EngineContext): void {
  let root;
  try {
    ({ root } = parseCompoundFile(output.bytes, {
      what: 'the written document',
      maxBytes: context.limits.maxBytes,
    }));
  } catch (error) {
    if (!(error instanceof Rejection)) throw error;
    throw new VerifyFailure('cfb.container', error.message);
  }
  const streams = new Map<string, Uint8Array>();
  for (const entry of root.children) {
    if (entry.kind !== 'stream') {
      throw new VerifyFailure('cfb.entries', `the written file holds the storage "${entry.name}"`);
    }
    streams.set(entry.name, entry.content);
  }
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
  if (clearObjectCharacters(word, table, fib, 'the written document', false) > 0) {
    throw new VerifyFailure(
      'word.objects',
      'a character of the written document is still an OLE object',
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
}

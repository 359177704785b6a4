import type { FormatHandler } from '../types.ts';
import { rebuildGzip } from './gzip.ts';
import { preflightArchive } from './preflight.ts';
import { verifyArchive } from './verify.ts';
import { rebuildZip } from './zip.ts';

/** Archives: zip is rebuilt member by member, gz is unwrapped and returned as a zip. */
export const archiveHandler: FormatHandler = {
  family: 'archive',
  async rebuild(input, context) {
    // The budgets of the whole tree are checked once, from the listings, before any member work.
    if (context.depth === 0) await preflightArchive(input, context);
    return input.format.kind === 'gzip' ? rebuildGzip(input, context) : rebuildZip(input, context);
  },
  verify: verifyArchive,
};

import type { FormatHandler } from '../types.ts';
import { rebuildGzip } from './gzip.ts';
import { verifyArchive } from './verify.ts';
import { rebuildZip } from './zip.ts';

/** Archives: zip is rebuilt member by member, gz is unwrapped and returned as a zip. */
export const archiveHandler: FormatHandler = {
  family: 'archive',
  rebuild(input, context) {
    return input.format.kind === 'gzip' ? rebuildGzip(input, context) : rebuildZip(input, context);
  },
  verify: verifyArchive,
};

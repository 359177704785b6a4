import type { FormatHandler } from '../types.ts';
import { rebuildRtf } from './rebuild.ts';
import { verifyRtf } from './verify.ts';

/** Rich Text Format (RTF 1.9.1): rebuilt from its allowlisted control words and destinations. */
export const rtfHandler: FormatHandler = {
  family: 'rtf',
  rebuild: rebuildRtf,
  verify: verifyRtf,
};

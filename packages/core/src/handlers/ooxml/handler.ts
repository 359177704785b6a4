import type { FormatHandler } from '../types.ts';
import { rebuildOoxml } from './rebuild.ts';
import { verifyOoxml } from './verify.ts';

/** Word, Excel and PowerPoint packages (ECMA-376): rebuilt from their allowlisted parts. */
export const ooxmlHandler: FormatHandler = {
  family: 'ooxml',
  rebuild: rebuildOoxml,
  verify: verifyOoxml,
};

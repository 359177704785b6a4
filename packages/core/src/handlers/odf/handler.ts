import type { FormatHandler } from '../types.ts';
import { rebuildOdf } from './rebuild.ts';
import { verifyOdf } from './verify.ts';

/** OpenDocument text (ODF 1.3): rebuilt from its allowlisted streams; ods/odp not yet. */
export const odfHandler: FormatHandler = {
  family: 'odf',
  rebuild: rebuildOdf,
  verify: verifyOdf,
};

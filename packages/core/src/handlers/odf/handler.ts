import type { FormatHandler } from '../types.ts';
import { convertOdf } from './convert.ts';
import { rebuildOdf } from './rebuild.ts';
import { verifyOdf } from './verify.ts';
import { verifyConverted } from '../../render/convert.ts';

/**
 * OpenDocument (ODF 1.3): a text rebuilt from its allowlisted streams; a spreadsheet or
 * presentation rebuilt the same way and returned as the PDF a renderer draws of it.
 */
export const odfHandler: FormatHandler = {
  family: 'odf',
  rebuild: (input, context) =>
    input.format.kind === 'odf-text' ? rebuildOdf(input, context) : convertOdf(input, context),
  verify: (output, input, context) =>
    input.format.kind === 'odf-text'
      ? verifyOdf(output, input, context)
      : verifyConverted(output, input, context),
};

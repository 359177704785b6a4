import { DisarmError } from '../../errors.ts';
import type { FormatHandler } from '../types.ts';
import { rebuildWordBinary } from './word/rebuild.ts';
import { verifyWordBinary } from './word/verify.ts';

/**
 * Word, Excel and PowerPoint 97-2003 files: compound files ([MS-CFB]) rebuilt by the kind their
 * allowlist row names. Word documents and templates are rebuilt; workbooks and presentations
 * fail as a fault (`ERR_NOT_YET_SUPPORTED`) until their rebuild ships, never passed through.
 */
export const cfbHandler: FormatHandler = {
  family: 'cfb',
  rebuild(input, context) {
    switch (input.format.kind) {
      case 'word-binary':
        return Promise.resolve().then(() => rebuildWordBinary(input, context));
      default:
        return Promise.reject(
          new DisarmError(
            'ERR_NOT_YET_SUPPORTED',
            `rebuilding .${input.format.extension} files (cfb) is not yet supported by this engine version`,
          ),
        );
    }
  },
  verify(output, input, context) {
    if (input.format.kind !== 'word-binary') {
      return Promise.reject(
        new TypeError(`no .${input.format.extension} output can exist to verify`),
      );
    }
    return verifyWordBinary(output, context);
  },
};

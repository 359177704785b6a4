import { DisarmError } from '../../errors.ts';
import type { FormatHandler } from '../types.ts';
import { rebuildExcelBinary } from './excel/rebuild.ts';
import { verifyExcelBinary } from './excel/verify.ts';
import { rebuildPowerPointBinary } from './powerpoint/rebuild.ts';
import { verifyPowerPointBinary } from './powerpoint/verify.ts';
import { rebuildWordBinary } from './word/rebuild.ts';
import { verifyWordBinary } from './word/verify.ts';

/**
 * Word, Excel and PowerPoint 97-2003 files (compound files, [MS-CFB]): each kind rebuilt by its
 * own engine, as the allowlist row names it. A kind without a rebuild fails as a fault
 * (`ERR_NOT_YET_SUPPORTED`), never passes through.
 */
export const cfbHandler: FormatHandler = {
  family: 'cfb',
  rebuild(input, context) {
    switch (input.format.kind) {
      case 'word-binary':
        return rebuildWordBinary(input, context);
      case 'excel-binary':
        return rebuildExcelBinary(input, context);
      case 'powerpoint-binary':
        return rebuildPowerPointBinary(input, context);
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
    switch (input.format.kind) {
      case 'word-binary':
        return verifyWordBinary(output, context);
      case 'excel-binary':
        return Promise.resolve().then(() => {
          verifyExcelBinary(output);
        });
      case 'powerpoint-binary':
        return verifyPowerPointBinary(output, context);
      default:
        return Promise.reject(
          new TypeError(`no .${input.format.extension} output can exist to verify`),
        );
    }
  },
};

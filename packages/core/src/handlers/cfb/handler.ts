import { DisarmError } from '../../errors.ts';
import type { FormatHandler } from '../types.ts';
import { rebuildExcelBinary } from './excel/rebuild.ts';
import { verifyExcelBinary } from './excel/verify.ts';

/**
 * Word, Excel and PowerPoint 97-2003 files (compound files, [MS-CFB]): each kind rebuilt by its
 * own engine. A kind whose rebuild has not shipped fails as a fault, never passes through.
 */
export const cfbHandler: FormatHandler = {
  family: 'cfb',
  rebuild(input, context) {
    switch (input.format.kind) {
      case 'excel-binary':
        return Promise.resolve().then(() => rebuildExcelBinary(input, context));
      default:
        return Promise.reject(
          new DisarmError(
            'ERR_NOT_YET_SUPPORTED',
            `rebuilding .${input.format.extension} files (cfb) is not yet supported by this engine version`,
          ),
        );
    }
  },
  verify(output, input) {
    switch (input.format.kind) {
      case 'excel-binary':
        return Promise.resolve().then(() => {
          verifyExcelBinary(output);
        });
      default:
        return Promise.reject(
          new TypeError(`no .${input.format.extension} output can exist to verify`),
        );
    }
  },
};

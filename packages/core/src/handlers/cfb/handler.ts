import { DisarmError } from '../../errors.ts';
import type { FormatHandler } from '../types.ts';
import { rebuildPowerPointBinary } from './powerpoint/rebuild.ts';
import { verifyPowerPointBinary } from './powerpoint/verify.ts';

/**
 * Word, Excel and PowerPoint 97-2003 files ([MS-CFB] compound files), dispatched on the kind of
 * document the container holds. A kind whose rebuild has not shipped fails as a fault, never
 * passes through.
 */
export const cfbHandler: FormatHandler = {
  family: 'cfb',
  rebuild(input, context) {
    switch (input.format.kind) {
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
  verify(output, input) {
    switch (input.format.kind) {
      case 'powerpoint-binary':
        return verifyPowerPointBinary(output);
      default:
        return Promise.reject(new TypeError(`no ${input.format.kind} output can exist to verify`));
    }
  },
};

import { extensionOf, isSupportedFileName } from '@disarm/core';

import { ProblemError } from '../http/problem-error.ts';
import { ValidationError } from '../http/validation.ts';

/** Upload fileName and submitted names: 1 to 255 characters (`createUpload`, `submitDocument`). */
export const MAX_FILE_NAME_CHARS = 255;

/**
 * Checks a submitted file name: 1-255 characters, no control characters or path separators,
 * and an extension on the allowlist.
 * @throws {ValidationError} for a malformed name
 * @throws {ProblemError} `UnsupportedFileType` for an extension not on the list
 */
export function assertFileName(name: string, field: string): string {
  // Characters as code points, so a name in any script gets its full 255.
  const length = Array.from(name).length;
  if (length === 0 || name.trim() === '') {
    throw new ValidationError([{ field, message: 'a file name is required' }]);
  }
  if (length > MAX_FILE_NAME_CHARS) {
    throw new ValidationError([
      { field, message: `the file name is longer than ${MAX_FILE_NAME_CHARS} characters` },
    ]);
  }
  // eslint-disable-next-line no-control-regex -- control characters are what we refuse
  if (/[\u0000-\u001f\u007f/\\]/.test(name)) {
    throw new ValidationError([
      { field, message: 'the file name must not contain control characters or path separators' },
    ]);
  }
  if (!isSupportedFileName(name)) {
    const extension = extensionOf(name);
    throw new ProblemError('UnsupportedFileType', {
      detail:
        extension === ''
          ? `"${name}" has no extension; the file type cannot be supported.`
          : `.${extension} files are not a supported type.`,
    });
  }
  return name;
}

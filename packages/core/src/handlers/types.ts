import type { Finding } from '../findings.ts';
import type { ContentKind, FormatFamily, FormatRow } from '../formats.ts';
import type { ByteSink } from '../_internal/byte-sink.ts';
import type { ByteSource } from '../_internal/byte-source.ts';
import type { DecodeGate } from '../_internal/concurrency.ts';
import type { Deadline, EntryBudget, ExpansionBudget, Limits } from '../limits.ts';
import type { Policy } from '../policy.ts';
import type { Renderer } from '../render/renderer.ts';
import type { Scanner } from '../scan/scanner.ts';

/** A file or archive member on its way through the engine. */
export interface FileInput {
  readonly bytes: Uint8Array;
  /** Name with extension; for members, the path inside the archive. */
  readonly fileName: string;
}

/** A file whose content has been checked against its allowlist row. */
export interface DetectedFile extends FileInput {
  readonly format: FormatRow;
}

/**
 * A detected file read by range: the submitted file on disk (never loaded whole), or bytes in
 * memory seen the same way (see {@link SourcedRebuild}).
 */
export interface SourcedFile {
  readonly source: ByteSource;
  readonly fileName: string;
  readonly format: FormatRow;
}

/** What a {@link SourcedRebuild} wrote: the output read back from its sink, and what it removed. */
export interface SourcedOutput {
  /** The rebuilt file, read back from where it was written (a file, or memory). */
  readonly content: ByteSource;
  readonly findings: readonly Finding[];
  /** As {@link HandlerOutput.manifest}. */
  readonly manifest?: OutputManifest;
}

/**
 * A family's rebuild of a file read by range into a sink, for the kinds whose formats allow it
 * (a zip's members, a PDF's objects): the submitted file on disk is then never held whole in
 * memory, nor is its rebuilt form. The family's in-memory `rebuild` and `verify` run the same
 * code over memory, so one implementation serves both.
 */
export interface SourcedRebuild {
  /** The content kinds rebuilt this way; the family's other kinds are read into memory. */
  readonly kinds: ReadonlySet<ContentKind>;
  /**
   * Rebuilds `input` into `sink` and finishes the sink.
   * @throws {Rejection} for properties of the file; any other error is a fault. The caller
   *   discards the sink's content on either.
   */
  rebuild(input: SourcedFile, context: EngineContext, sink: ByteSink): Promise<SourcedOutput>;
  /** Verify before release of what {@link rebuild} wrote, as {@link FormatHandler.verify}. */
  verify(output: SourcedOutput, input: SourcedFile, context: EngineContext): Promise<void>;
}

/** A rebuilt file, ready to return or to put into a rebuilt archive. */
export interface RebuiltFile {
  readonly bytes: Uint8Array;
  /** Name it is returned under (new extension when converted). */
  readonly fileName: string;
  readonly format: FormatRow;
  readonly converted: boolean;
  readonly findings: readonly Finding[];
}

/** What a handler returns: the new bytes, in the row's output format, and what it removed. */
export interface HandlerOutput {
  readonly bytes: Uint8Array;
  readonly findings: readonly Finding[];
  /**
   * What the rebuild decided the output holds, for the family's verify step to hold the written
   * file against. Archives: the entry names in the order written.
   */
  readonly manifest?: OutputManifest;
  /**
   * Verdicts of check workers on parts of the output, by lower-cased member name, reached while
   * the parts were written (see `handlers/office/part-checks.ts`). The family's verify accepts one only
   * for the very bytes it was reached on, and checks a part itself where there is none.
   */
  readonly checkedParts?: ReadonlyMap<string, Promise<PartCheckResult>>;
}

/**
 * A check worker's verdict on one written part's bytes (see {@link HandlerOutput.checkedParts}).
 * `references` is what the part names that only the package can resolve: OOXML relationship id ->
 * the first element naming it; ODF package path -> the first link to it, as written.
 */
export type PartCheckResult =
  | {
      readonly status: 'checked';
      readonly size: number;
      readonly sha256: string;
      readonly references: ReadonlyMap<string, string>;
    }
  | { readonly status: 'failed'; readonly check: string; readonly message: string };

/** What a rebuilt container holds, as the rebuild decided it (see {@link HandlerOutput}). */
export interface OutputManifest {
  /** Archive entry paths, in order; directories end in `/`. */
  readonly entryNames: readonly string[];
}

/** Everything one `disarm()` call shares across its recursion into archives. */
export interface EngineContext {
  readonly limits: Limits;
  readonly policy: Policy;
  readonly scanners: readonly Scanner[];
  /** Renderers of the formats returned as PDF, asked in order (see `render/convert.ts`). */
  readonly renderers: readonly Renderer[];
  readonly deadline: Deadline;
  readonly budget: ExpansionBudget;
  /** Archive entries counted across the whole tree, against `maxEntries`. */
  readonly entries: EntryBudget;
  /** Image decodes in flight across the whole tree, against `maxDecodeBytes` together. */
  readonly decodes: DecodeGate;
  readonly signal: AbortSignal;
  /** 0 for the submitted file, 1 for members of a top-level archive, and so on. */
  readonly depth: number;
  /**
   * Every enclosing archive, outermost first, to refuse archives that contain themselves (they
   * are open anyway while their members are processed; the submitted one may be a file on disk).
   */
  readonly ancestors: readonly ByteSource[];
  /**
   * Runs a member through the whole engine (scan, detect, rebuild) one level deeper.
   * @throws {Rejection} when the member is rejected.
   */
  processMember(input: FileInput, archive: Uint8Array | ByteSource): Promise<RebuiltFile>;
  /**
   * Scans a member and, if it is itself an archive, its members, without rebuilding: for what
   * the rebuild drops (office package parts, PDF attachments) and after an archive is already
   * lost to another reason, so a threat further on still wins. `archive` is the enclosing file.
   * @returns the threat names found.
   */
  scanMember(input: FileInput, archive: Uint8Array | ByteSource): Promise<readonly string[]>;
}

/** Rebuilds one family of formats. One folder under `handlers/`, one row in the registry. */
export interface FormatHandler {
  readonly family: FormatFamily;
  /**
   * Builds a new file from the known-safe parts of `input`.
   * @throws {Rejection} for properties of the file; any other error is a fault.
   */
  rebuild(input: DetectedFile, context: EngineContext): Promise<HandlerOutput>;
  /**
   * Verify before release: re-reads `output` with a reader independent of {@link rebuild} and
   * checks it against the family's rules (for images: no metadata block, no profile but ours,
   * nothing after the end). Runs after the engine-wide checks (re-detection, not identical to
   * the input).
   * @throws {VerifyFailure} naming the check that failed; the engine turns it into a fault
   *   (`ERR_VERIFY_FAILED`), never into a released file.
   */
  verify(output: HandlerOutput, input: DetectedFile, context: EngineContext): Promise<void>;
  /** The family's rebuild by range, for the kinds it lists; absent: always in memory. */
  readonly sourced?: SourcedRebuild;
}

/**
 * A verify-before-release check found a rebuilt output wanting. `check` is a stable name (for
 * example `image.no-metadata`) that the engine puts in the fault's message and logs.
 */
export class VerifyFailure extends Error {
  readonly check: string;

  constructor(check: string, message: string) {
    super(message);
    this.name = 'VerifyFailure';
    this.check = check;
  }
}

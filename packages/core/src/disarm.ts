import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';

import { fileSink, memorySink } from './_internal/byte-sink.ts';
import type { ByteSink, FileSink } from './_internal/byte-sink.ts';
import { FileSource, memorySource, sameContent } from './_internal/byte-source.ts';
import type { ByteSource } from './_internal/byte-source.ts';
import { asBuffer } from './_internal/bytes.ts';
import { DecodeGate } from './_internal/concurrency.ts';
import { openSource } from './_internal/read-source.ts';
import type { SourceInput } from './_internal/read-source.ts';
import { Rejection, ThreatReport } from './_internal/rejection.ts';
import { openZip, readMember } from './_internal/zip-reader.ts';
import { assertContentMatches, assertSourceMatches } from './detect/detect.ts';
import { sniff, SNIFF_WINDOW_BYTES } from './detect/sniff.ts';
import { DisarmError } from './errors.ts';
import { FINDING_KINDS } from './findings.ts';
import type { FindingKind } from './findings.ts';
import { extensionOf, formatForFileName, outputFileName } from './formats.ts';
import type { FormatRow } from './formats.ts';
import { HANDLERS } from './handlers/registry.ts';
import type {
  EngineContext,
  FileInput,
  RebuiltFile,
  SourcedFile,
  SourcedRebuild,
} from './handlers/types.ts';
import { Deadline, EntryBudget, ExpansionBudget, resolveLimits } from './limits.ts';
import type { Limits } from './limits.ts';
import { mediaTypeOf } from './outcome.ts';
import type { FileOutcome, Outcome } from './outcome.ts';
import type { Policy } from './policy.ts';
import { builtinRenderer } from './render/builtin/index.ts';
import type { Renderer } from './render/renderer.ts';
import { builtinScanner } from './scan/eicar.ts';
import type { ScanContext, Scanner } from './scan/scanner.ts';
import { verifyBeforeRelease, verifySourcedBeforeRelease } from './verify/verify.ts';

/**
 * The file to disarm: its bytes (or a path or stream to read them from) and the name it was
 * submitted under. The extension of `fileName` decides which format the bytes must be.
 */
export type DisarmSource = SourceInput & {
  /** Declared file name, e.g. `report.docx`. Only its extension matters to the engine. */
  readonly fileName: string;
};

/** Options of {@link disarm}. */
export interface DisarmOptions {
  /** Bounds on size, nesting, pixels and time; see {@link Limits} for the defaults. */
  readonly limits?: Partial<Limits>;
  /**
   * Per finding kind, `strip` (default) or `reject`. Rejecting a kind turns a file that carries
   * it into a `policy_violation` rejection instead of a stripped copy.
   */
  readonly policy?: Policy;
  /**
   * Threat scanners run on the raw bytes of the file, of every archive member and of every
   * embedded object (office package parts, PDF attachments), before any format check. Default:
   * the built-in EICAR scanner only.
   *
   * **Security:** the built-in scanner only knows the EICAR test file. Add a real engine (for
   * example ClamAV through `createClamdScanner`) in production.
   */
  readonly scanners?: readonly Scanner[];
  /**
   * Renderers for the formats returned as PDF (svg, html, htm, ods, odp), asked in order: the
   * first that lists a document's kind draws it. The built-in renderer ({@link builtinRenderer})
   * always follows them, so a kind none of them lists is still drawn, with less fidelity. What a
   * renderer draws is sanitised first and its PDF rebuilt and verified like a submitted one.
   * @default none: the built-in renderer draws every kind
   */
  readonly renderers?: readonly Renderer[];
  /** Abort processing; the call then throws {@link DisarmError} `ERR_TIMEOUT`. */
  readonly signal?: AbortSignal;
}

const gunzipAsync = promisify(gunzip);

/** The rebuilt submitted file, in memory or where `outputPath` put it. */
interface Released {
  readonly content: ByteSource;
  readonly fileName: string;
  readonly format: FormatRow;
  readonly converted: boolean;
  readonly findings: RebuiltFile['findings'];
}

/**
 * Rebuilds an untrusted file into a safe copy, or rejects it with one of the v1 API's reasons.
 *
 * Detect (allowlisted extension, content matches it) -> scan (threats) -> rebuild from known-safe
 * parts -> convert where README "What it handles" says so. Archives are rebuilt member by member,
 * recursively.
 *
 * @returns `cleaned` with the rebuilt bytes, or `rejected` with a reason and a detail
 *   ({@link disarmToFile} writes the bytes to a file instead).
 * @throws {DisarmError} for faults only: `ERR_TIMEOUT` when the time budget runs out or `signal`
 *   aborts, `ERR_NOT_YET_SUPPORTED` for a family whose rebuild has not shipped, `ERR_INTERNAL`
 *   for bugs. A thrown error means "failed", never "rejected".
 * @throws {TypeError} for invalid options or an unusable source (no content, not a regular file);
 *   never for anything that happens while the file is processed.
 *
 * @example
 * ```ts
 * import { disarm } from '@disarm/core';
 *
 * const outcome = await disarm({ path: 'upload.png', fileName: 'upload.png' });
 * if (outcome.status === 'cleaned') await writeFile(`clean-${outcome.fileName}`, outcome.bytes);
 * else console.log(outcome.reason, outcome.detail);
 * ```
 */
export function disarm(source: DisarmSource, options: DisarmOptions = {}): Promise<Outcome> {
  return run(source, options, undefined) as Promise<Outcome>;
}

/**
 * {@link disarm}, writing the cleaned file to `outputPath` instead of returning its bytes: the
 * outcome has `path` and `sizeBytes` in place of `bytes`. With a `path` source of a family
 * rebuilt by range (zip, PDF), neither the file nor its cleaned copy is ever held whole in memory,
 * whatever their size. The file is created and never replaces one (an existing path is a
 * `TypeError`); when the file is rejected or a fault stops the run, nothing is left there.
 *
 * @example
 * ```ts
 * import { disarmToFile } from '@disarm/core';
 *
 * const outcome = await disarmToFile(
 *   { path: 'photos.zip', fileName: 'photos.zip' },
 *   'clean/photos.zip',
 *   { limits: { maxBytes: 450 * 1024 * 1024 } },
 * );
 * if (outcome.status === 'cleaned') console.log(outcome.path, outcome.sizeBytes);
 * ```
 * @throws as {@link disarm}; a `TypeError` too when `outputPath` exists or cannot be written.
 */
export function disarmToFile(
  source: DisarmSource,
  outputPath: string,
  options: DisarmOptions = {},
): Promise<FileOutcome> {
  const path: unknown = outputPath;
  if (typeof path !== 'string' || path === '') {
    return Promise.reject(new TypeError('outputPath must be a non-empty string'));
  }
  return run(source, options, outputPath) as Promise<FileOutcome>;
}

/** {@link disarm} and {@link disarmToFile}: the outcome in memory, or in `outputPath`. */
async function run(
  source: DisarmSource,
  options: DisarmOptions,
  outputPath: string | undefined,
): Promise<Outcome | FileOutcome> {
  const limits = resolveLimits(options.limits);
  const policy = validatePolicy(options.policy ?? {});
  const scanners = options.scanners ?? [builtinScanner];
  if (typeof source.fileName !== 'string') throw new TypeError('source.fileName must be a string');
  const output = new OutputTarget(outputPath);
  const controller = new AbortController();
  const deadline = new Deadline(limits.timeoutMs, options.signal);
  const onAbort = (): void => {
    controller.abort(options.signal?.reason);
  };
  options.signal?.addEventListener('abort', onAbort, { once: true });
  // Only the source itself can be a caller's mistake (`TypeError`); once it is open, a
  // `TypeError` is a fault inside the engine (a broken invariant, a plugin's bug): ERR_INTERNAL.
  let reading = true;
  let content: ByteSource | undefined;
  try {
    content = await openSource(source, limits.maxBytes);
    reading = false;
    const context = createContext({
      limits,
      policy,
      scanners,
      renderers: [...(options.renderers ?? []), builtinRenderer],
      deadline,
      budget: new ExpansionBudget(limits.maxBytes),
      entries: new EntryBudget(limits.maxEntries),
      decodes: new DecodeGate(limits.maxDecodeBytes),
      signal: controller.signal,
      depth: 0,
      ancestors: [],
    });
    const rebuilt =
      content instanceof FileSource
        ? await processSubmittedFile({ file: content, fileName: source.fileName }, context, output)
        : released(
            await processFile(
              { bytes: await content.readAll(), fileName: source.fileName },
              context,
            ),
          );
    const common = {
      status: 'cleaned',
      fileName: rebuilt.fileName,
      format: rebuilt.format.outputExtension,
      mediaType: mediaTypeOf(rebuilt.format.outputExtension),
      modifications: rebuilt.converted
        ? (['rebuilt', 'converted'] as const)
        : (['rebuilt'] as const),
      findings: rebuilt.findings,
    } as const;
    if (outputPath === undefined) return { ...common, bytes: await rebuilt.content.readAll() };
    return { ...common, ...(await output.keep(rebuilt.content)) };
  } catch (error) {
    await output.discard();
    if (error instanceof Rejection) {
      return error.reason === 'threat_detected'
        ? {
            status: 'rejected',
            reason: error.reason,
            detail: error.message,
            threatNames: error.threatNames,
          }
        : { status: 'rejected', reason: error.reason, detail: error.message };
    }
    if (error instanceof DisarmError || (error instanceof TypeError && reading)) throw error;
    throw new DisarmError('ERR_INTERNAL', 'the engine failed while processing the file', {
      cause: error,
    });
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
    controller.abort();
    if (content instanceof FileSource) content.close();
    output.close();
  }
}

/**
 * Where the cleaned file goes: returned in memory, or written to `outputPath`, a file created
 * before any work (a family that writes as it rebuilds writes straight into it).
 */
class OutputTarget {
  readonly #sink: FileSink | undefined;
  #written: FileSource | undefined;

  /** @throws {TypeError} when `path` exists or cannot be created. */
  constructor(path: string | undefined) {
    if (path === undefined) return;
    try {
      this.#sink = fileSink(path);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException | undefined)?.code;
      throw new TypeError(
        code === 'EEXIST'
          ? `outputPath: ${path} already exists`
          : `outputPath: cannot create ${path} (${code ?? 'unknown error'})`,
        { cause: error },
      );
    }
  }

  /** The sink a family rebuilt by range writes into: the file, or memory. */
  sink(): ByteSink {
    return this.#sink ?? memorySink();
  }

  /** Makes sure `content` is in the output file; its path and size. */
  async keep(content: ByteSource): Promise<{ path: string; sizeBytes: number }> {
    const sink = this.#sink;
    if (sink === undefined) throw new TypeError('there is no output file');
    if (!(content instanceof FileSource && content.path === sink.path)) {
      // Rebuilt in memory: the bytes go to the file now.
      await sink.write(content.bytes ?? (await content.readAll()));
      content = await sink.finish();
    }
    this.#written = content instanceof FileSource ? content : undefined;
    return { path: sink.path, sizeBytes: content.length };
  }

  /** Removes what was written of a file that is not released. */
  async discard(): Promise<void> {
    this.#written?.close();
    this.#written = undefined;
    await this.#sink?.discard().catch(() => undefined);
  }

  close(): void {
    this.#written?.close();
  }
}

type ContextState = Omit<EngineContext, 'processMember' | 'scanMember'>;

function createContext(state: ContextState): EngineContext {
  const child = (archive: Uint8Array | ByteSource): EngineContext =>
    createContext({
      ...state,
      depth: state.depth + 1,
      ancestors: [
        ...state.ancestors,
        archive instanceof Uint8Array ? memorySource(archive) : archive,
      ],
    });
  return {
    ...state,
    processMember: async (input, archive) => {
      const context = child(archive);
      assertNotQuine(input, context);
      return processFile(input, context);
    },
    scanMember: (input, archive) => collectThreats(input, child(archive)),
  };
}

/** The engine's one way through, for the submitted file and for every archive member. */
async function processFile(input: FileInput, context: EngineContext): Promise<RebuiltFile> {
  context.deadline.check();
  const threats = await scan(input, context);
  if (threats.length > 0) {
    throw await threatRejection(threats, memorySource(input.bytes), input.fileName, context);
  }
  return rebuildScanned(input, allowlisted(input.fileName), context);
}

/**
 * The submitted file on disk: scanned as it is read, then rebuilt by range into the output
 * (never held whole) when its family can ({@link SourcedRebuild}), else read into memory and
 * rebuilt like any other file. The same steps, in the same order, as {@link processFile}.
 */
async function processSubmittedFile(
  input: { readonly file: FileSource; readonly fileName: string },
  context: EngineContext,
  output: OutputTarget,
): Promise<Released> {
  const { file, fileName } = input;
  context.deadline.check();
  const threats = await scanFile(file, fileName, context);
  if (threats.length > 0) throw await threatRejection(threats, file, fileName, context);
  const format = allowlisted(fileName);
  const family = HANDLERS[format.family].sourced;
  if (!family?.kinds.has(format.kind)) {
    return released(
      await rebuildScanned({ bytes: await file.readAll(), fileName }, format, context),
    );
  }
  await assertSourceMatches(file, format, context.limits);
  assertDepth(format, context);
  const detected: SourcedFile = { source: file, fileName, format };
  const rebuilt = await rebuildSourced(detected, family, context, output.sink());
  return {
    content: rebuilt.content,
    fileName: outputFileName(fileName, format),
    format,
    converted: format.outputExtension !== format.extension,
    findings: rebuilt.findings,
  };
}

/** Rebuild, verify before release, size and policy of a file read by range. */
async function rebuildSourced(
  input: SourcedFile,
  family: SourcedRebuild,
  context: EngineContext,
  sink: ByteSink,
): Promise<{ content: ByteSource; findings: RebuiltFile['findings'] }> {
  const output = await family.rebuild(input, context, sink);
  context.deadline.check();
  await verifySourcedBeforeRelease(output, input, context, family);
  assertReleasable(output.content.length, output.findings, context);
  return { content: output.content, findings: output.findings };
}

/** A file rebuilt in memory, as the submitted file's outcome. */
function released(rebuilt: RebuiltFile): Released {
  return { ...rebuilt, content: memorySource(rebuilt.bytes) };
}

/** The allowlist row of a file name, or `unsupported_file_type`. */
function allowlisted(fileName: string): FormatRow {
  const format = formatForFileName(fileName);
  if (format) return format;
  const extension = extensionOf(fileName);
  throw new Rejection(
    'unsupported_file_type',
    extension === ''
      ? `"${fileName}" has no file extension, so its type is not supported`
      : `.${extension} files are not a supported type`,
  );
}

function assertDepth(format: FormatRow, context: EngineContext): void {
  if (format.family === 'archive' && context.depth >= context.limits.maxDepth) {
    throw new Rejection(
      'policy_violation',
      `archives nest more than ${context.limits.maxDepth} levels deep`,
    );
  }
}

/** Detect, rebuild, verify, size and policy of a scanned file in memory. */
async function rebuildScanned(
  input: FileInput,
  format: FormatRow,
  context: EngineContext,
): Promise<RebuiltFile> {
  await assertContentMatches(input.bytes, format, context.limits);
  assertDepth(format, context);
  const detected = { ...input, format };
  const output = await HANDLERS[format.family].rebuild(detected, context);
  context.deadline.check();
  await verifyBeforeRelease(output, detected, context);
  assertReleasable(output.bytes.length, output.findings, context);
  return {
    bytes: output.bytes,
    fileName: outputFileName(input.fileName, format),
    format,
    converted: format.outputExtension !== format.extension,
    findings: output.findings,
  };
}

/** The output's size against the ceiling, and its findings against the policy. */
function assertReleasable(
  size: number,
  findings: RebuiltFile['findings'],
  context: EngineContext,
): void {
  if (size > context.limits.maxBytes) {
    throw new Rejection('file_too_large', 'the rebuilt file is larger than the content ceiling');
  }
  for (const finding of findings) {
    if (context.policy[finding.kind] === 'reject') {
      throw new Rejection(
        'policy_violation',
        `the file contains ${describe(finding.kind)}, which the content policy rejects`,
      );
    }
  }
}

/** A finding kind in a sentence: its label lower-cased unless it starts with a name. */
function describe(kind: FindingKind): string {
  const label = FINDING_KINDS[kind];
  // "VBA", "PDF", "ActiveX", "OpenDocument" and "Excel" keep their capitals.
  const common = /^[A-Z][a-z]+\b/.test(label) && !label.startsWith('Excel');
  return `${common ? label.charAt(0).toLowerCase() + label.slice(1) : label} (${kind})`;
}

async function scan(input: FileInput, context: EngineContext): Promise<string[]> {
  const names = new Set<string>();
  for (const scanner of context.scanners) {
    const found = await context.deadline.race(
      scanner.scan(input.bytes, scanContext(input.fileName, context)),
    );
    for (const name of found) names.add(name);
  }
  return [...names];
}

/**
 * The submitted file's scan, read from disk as each scanner consumes it; a scanner without
 * `scanFile` gets the file read into memory (once, for all such scanners).
 */
async function scanFile(
  file: FileSource,
  fileName: string,
  context: EngineContext,
): Promise<string[]> {
  const names = new Set<string>();
  let bytes: Uint8Array | undefined;
  for (const scanner of context.scanners) {
    const scanning =
      scanner.scanFile === undefined
        ? (async () =>
            scanner.scan((bytes ??= await file.readAll()), scanContext(fileName, context)))()
        : scanner.scanFile(
            { path: file.path, size: file.length, chunks: () => file.chunks() },
            scanContext(fileName, context),
          );
    for (const name of await context.deadline.race(scanning)) names.add(name);
  }
  return [...names];
}

function scanContext(fileName: string, context: EngineContext): ScanContext {
  return { fileName, signal: context.signal };
}

/** The rejection for threats found in a file, with the places inside it where they are. */
async function threatRejection(
  threats: readonly string[],
  source: ByteSource,
  fileName: string,
  context: EngineContext,
): Promise<Rejection> {
  const report = new ThreatReport();
  report.addPlaced(threats, await locateThreats(source, fileName, context));
  return report.toRejection('the file');
}

/**
 * Where inside a file its threats are, once the file's own scan found some: a scanner such as
 * clamd unpacks archives and documents itself and names no place. The members of a zip (the
 * parts of an office package), the content of a gzip and the attachments of a PDF are scanned
 * one by one under the same budgets. Best effort: what does not open, or runs out of time or
 * budget, leaves the threats without a place; the file is rejected either way.
 */
async function locateThreats(
  source: ByteSource,
  fileName: string,
  context: EngineContext,
): Promise<ThreatReport> {
  const report = new ThreatReport();
  const format = formatForFileName(fileName);
  try {
    const kind = sniff(source.read(0, SNIFF_WINDOW_BYTES));
    if ((kind === 'pdf' || kind === 'fdf') && format?.family === 'pdf') {
      // The PDF family loads on use (see `handlers/registry.ts`).
      const { locateAttachmentThreats } = await import('./handlers/pdf/handler.ts');
      return await locateAttachmentThreats({ source, fileName, format }, context);
    }
    await scanContents(source, fileName, context, (found, where) => {
      report.add(found, where);
    });
  } catch {
    // Best effort: the threats found so far keep their places, the others go without.
  }
  return report;
}

/**
 * Scans what a gzip or zip holds, member by member, under the tree's entry and content budgets,
 * telling `onScanned` what each member's scan found and where the member is (nothing for any
 * other kind of file).
 */
async function scanContents(
  source: ByteSource,
  fileName: string,
  context: EngineContext,
  onScanned: (found: readonly string[], where: string) => void,
): Promise<void> {
  const kind = sniff(source.read(0, SNIFF_WINDOW_BYTES));
  if (kind === 'gzip') {
    const inner = await context.deadline.race(
      gunzipAsync(asBuffer(await source.readAll()), { maxOutputLength: context.budget.remaining }),
    );
    context.budget.consume(inner.length, 'the gzip data');
    const found = await context.scanMember({ bytes: inner, fileName: 'inner' }, source);
    onScanned(found, 'the compressed file');
    return;
  }
  if (kind !== 'zip') return;
  const format = formatForFileName(fileName);
  const noun = format?.family === 'ooxml' || format?.family === 'odf' ? 'part' : 'member';
  const listing = await openZip(source, context.limits.maxEntries);
  try {
    // The walk shares the tree's entry budget: digging stops where the rebuild would have.
    context.entries.consume(listing.members.length);
    for (const member of listing.members) {
      if (member.isDirectory || member.isEncrypted) continue;
      const bytes = await readMember(listing, member, context.budget.remaining, member.name);
      context.budget.consume(bytes.length, member.name);
      const found = await context.scanMember({ bytes, fileName: member.name }, source);
      onScanned(found, `${noun} "${member.name}"`);
    }
  } finally {
    listing.file.close();
  }
}

/** An archive member that is byte for byte one of its enclosing archives: a quine. */
function assertNotQuine(input: FileInput, context: EngineContext): void {
  const kind = sniff(input.bytes);
  if (kind !== 'zip' && kind !== 'gzip') return;
  const member = memorySource(input.bytes);
  let quine = false;
  for (const archive of context.ancestors) quine ||= sameContent(member, archive);
  if (quine) {
    throw new Rejection(
      'policy_violation',
      `"${input.fileName}" is a copy of an archive that contains it (a recursive quine)`,
    );
  }
}

/**
 * Scan-only walk of a member (and, for a zip or gzip, its members), used once the archive is
 * already rejected, so that a threat anywhere in it still decides the reason. Members that cannot
 * be read are skipped: the archive is rejected either way.
 */
async function collectThreats(input: FileInput, context: EngineContext): Promise<string[]> {
  const threats = await scan(input, context);
  if (threats.length > 0 || context.depth > context.limits.maxDepth) return threats;
  try {
    assertNotQuine(input, context);
    await scanContents(memorySource(input.bytes), input.fileName, context, (found) =>
      threats.push(...found),
    );
  } catch (error) {
    if (error instanceof DisarmError) throw error;
  }
  return [...new Set(threats)];
}

function validatePolicy(policy: Policy): Policy {
  for (const [kind, action] of Object.entries(policy as Record<string, unknown>)) {
    if (!(kind in FINDING_KINDS)) throw new TypeError(`policy: unknown finding kind "${kind}"`);
    if (action !== 'strip' && action !== 'reject') {
      throw new TypeError(`policy.${kind} must be "strip" or "reject"`);
    }
  }
  return policy;
}

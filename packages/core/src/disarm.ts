import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';

import { asBuffer } from './_internal/bytes.ts';
import { DecodeGate } from './_internal/concurrency.ts';
import { readSource } from './_internal/read-source.ts';
import type { SourceInput } from './_internal/read-source.ts';
import { Rejection, ThreatReport } from './_internal/rejection.ts';
import { openZip, readMember } from './_internal/zip-reader.ts';
import { assertContentMatches } from './detect/detect.ts';
import { sniff } from './detect/sniff.ts';
import { DisarmError } from './errors.ts';
import { FINDING_KINDS } from './findings.ts';
import type { FindingKind } from './findings.ts';
import { extensionOf, formatForFileName, outputFileName } from './formats.ts';
import { locateAttachmentThreats } from './handlers/pdf/handler.ts';
import { HANDLERS } from './handlers/registry.ts';
import type { EngineContext, FileInput, RebuiltFile } from './handlers/types.ts';
import { Deadline, EntryBudget, ExpansionBudget, resolveLimits } from './limits.ts';
import type { Limits } from './limits.ts';
import { mediaTypeOf } from './outcome.ts';
import type { Outcome } from './outcome.ts';
import type { Policy } from './policy.ts';
import { builtinRenderer } from './render/builtin/index.ts';
import type { Renderer } from './render/renderer.ts';
import { builtinScanner } from './scan/eicar.ts';
import type { Scanner } from './scan/scanner.ts';
import { verifyBeforeRelease } from './verify/verify.ts';

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

/**
 * Rebuilds an untrusted file into a safe copy, or rejects it with one of the v1 API's reasons.
 *
 * Detect (allowlisted extension, content matches it) -> scan (threats) -> rebuild from known-safe
 * parts -> convert where README "What it handles" says so. Archives are rebuilt member by member,
 * recursively.
 *
 * @returns `cleaned` with the rebuilt bytes, or `rejected` with a reason and a detail.
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
export async function disarm(source: DisarmSource, options: DisarmOptions = {}): Promise<Outcome> {
  const limits = resolveLimits(options.limits);
  const policy = validatePolicy(options.policy ?? {});
  const scanners = options.scanners ?? [builtinScanner];
  if (typeof source.fileName !== 'string') throw new TypeError('source.fileName must be a string');
  const controller = new AbortController();
  const deadline = new Deadline(limits.timeoutMs, options.signal);
  const onAbort = (): void => {
    controller.abort(options.signal?.reason);
  };
  options.signal?.addEventListener('abort', onAbort, { once: true });
  // Only the source itself can be a caller's mistake (`TypeError`); once it is read, a
  // `TypeError` is a fault inside the engine (a broken invariant, a plugin's bug): ERR_INTERNAL.
  let reading = true;
  try {
    const bytes = await readSource(source, limits.maxBytes);
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
    const rebuilt = await processFile({ bytes, fileName: source.fileName }, context);
    return {
      status: 'cleaned',
      bytes: rebuilt.bytes,
      fileName: rebuilt.fileName,
      format: rebuilt.format.outputExtension,
      mediaType: mediaTypeOf(rebuilt.format.outputExtension),
      modifications: rebuilt.converted ? ['rebuilt', 'converted'] : ['rebuilt'],
      findings: rebuilt.findings,
    };
  } catch (error) {
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
  }
}

type ContextState = Omit<EngineContext, 'processMember' | 'scanMember'>;

function createContext(state: ContextState): EngineContext {
  const child = (archive: Uint8Array): EngineContext =>
    createContext({
      ...state,
      depth: state.depth + 1,
      ancestors: [...state.ancestors, archive],
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
    const report = new ThreatReport();
    report.addPlaced(threats, await locateThreats(input, context));
    throw report.toRejection('the file');
  }
  const format = formatForFileName(input.fileName);
  if (!format) {
    const extension = extensionOf(input.fileName);
    throw new Rejection(
      'unsupported_file_type',
      extension === ''
        ? `"${input.fileName}" has no file extension, so its type is not supported`
        : `.${extension} files are not a supported type`,
    );
  }
  await assertContentMatches(input.bytes, format, context.limits);
  if (format.family === 'archive' && context.depth >= context.limits.maxDepth) {
    throw new Rejection(
      'policy_violation',
      `archives nest more than ${context.limits.maxDepth} levels deep`,
    );
  }
  const detected = { ...input, format };
  const output = await HANDLERS[format.family].rebuild(detected, context);
  context.deadline.check();
  await verifyBeforeRelease(output, detected, context);
  if (output.bytes.length > context.limits.maxBytes) {
    throw new Rejection('file_too_large', 'the rebuilt file is larger than the content ceiling');
  }
  for (const finding of output.findings) {
    if (context.policy[finding.kind] === 'reject') {
      throw new Rejection(
        'policy_violation',
        `the file contains ${describe(finding.kind)}, which the content policy rejects`,
      );
    }
  }
  return {
    bytes: output.bytes,
    fileName: outputFileName(input.fileName, format),
    format,
    converted: format.outputExtension !== format.extension,
    findings: output.findings,
  };
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
      scanner.scan(input.bytes, { fileName: input.fileName, signal: context.signal }),
    );
    for (const name of found) names.add(name);
  }
  return [...names];
}

/**
 * Where inside a file its threats are, once the file's own scan found some: a scanner such as
 * clamd unpacks archives and documents itself and names no place. The members of a zip (the
 * parts of an office package), the content of a gzip and the attachments of a PDF are scanned
 * one by one under the same budgets. Best effort: what does not open, or runs out of time or
 * budget, leaves the threats without a place; the file is rejected either way.
 */
async function locateThreats(input: FileInput, context: EngineContext): Promise<ThreatReport> {
  const report = new ThreatReport();
  const format = formatForFileName(input.fileName);
  try {
    const kind = sniff(input.bytes);
    if ((kind === 'pdf' || kind === 'fdf') && format?.family === 'pdf') {
      return await locateAttachmentThreats({ ...input, format }, context);
    }
    await scanContents(input, context, (found, where) => {
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
  input: FileInput,
  context: EngineContext,
  onScanned: (found: readonly string[], where: string) => void,
): Promise<void> {
  const kind = sniff(input.bytes);
  if (kind === 'gzip') {
    const inner = await context.deadline.race(
      gunzipAsync(asBuffer(input.bytes), { maxOutputLength: context.budget.remaining }),
    );
    context.budget.consume(inner.length, 'the gzip data');
    const found = await context.scanMember({ bytes: inner, fileName: 'inner' }, input.bytes);
    onScanned(found, 'the compressed file');
    return;
  }
  if (kind !== 'zip') return;
  const format = formatForFileName(input.fileName);
  const noun = format?.family === 'ooxml' || format?.family === 'odf' ? 'part' : 'member';
  const listing = await openZip(input.bytes, context.limits.maxEntries);
  try {
    // The walk shares the tree's entry budget: digging stops where the rebuild would have.
    context.entries.consume(listing.members.length);
    for (const member of listing.members) {
      if (member.isDirectory || member.isEncrypted) continue;
      const bytes = await readMember(listing, member, context.budget.remaining, member.name);
      context.budget.consume(bytes.length, member.name);
      const found = await context.scanMember({ bytes, fileName: member.name }, input.bytes);
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
  const bytes = asBuffer(input.bytes);
  if (context.ancestors.some((archive) => bytes.equals(archive))) {
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
    await scanContents(input, context, (found) => threats.push(...found));
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

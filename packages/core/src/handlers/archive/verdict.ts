import { Rejection, ThreatReport } from '../../_internal/rejection.ts';
import { sniff } from '../../detect/sniff.ts';
import { isDisarmError } from '../../errors.ts';
import { formatForFileName } from '../../formats.ts';
import type { RejectionReason } from '../../reasons.ts';
import type { FileInput } from '../types.ts';

/**
 * Which rejection an archive gets when it has several, most decisive first: what its content is
 * (a threat), what the policy forbids (names, links, nesting, entry budget), what cannot be opened
 * (an encrypted member hides its type too), what type is not accepted (README "Archives"),
 * what is corrupt, what is too large.
 */
const PRECEDENCE: readonly RejectionReason[] = [
  'threat_detected',
  'policy_violation',
  'password_protected',
  'unsupported_file_type',
  'invalid_file',
  'file_too_large',
];

/**
 * Collects the outcome of an archive's members so that the answer depends on the set of members,
 * never on their order. README "Archives": one threat rejects the whole archive with
 * `threat_detected` (every threat's name is collected); otherwise the most decisive rejection in
 * {@link PRECEDENCE} order wins (the first member in directory order among equals); a fault (a
 * member whose family is not yet rebuilt, a codec failure) counts only when no member is
 * rejected, so it never hides a later member's rejection.
 */
export class ArchiveVerdict {
  readonly #threats = new ThreatReport();
  readonly #rejections: Rejection[] = [];
  #fault: { error: unknown } | undefined;

  /** True once the archive cannot come back cleaned. */
  get lost(): boolean {
    return this.#threats.size > 0 || this.#rejections.length > 0 || this.#fault !== undefined;
  }

  /** Records threats found in `what` (e.g. `member "a/b.exe"`). */
  addThreats(names: readonly string[], what: string): void {
    this.#threats.add(names, what);
  }

  /** Records a rejection of the archive, or of the member `what`. */
  reject(rejection: Rejection, what?: string): void {
    if (rejection.reason !== 'threat_detected') this.#rejections.push(rejection);
    else if (what === undefined) this.#threats.add(rejection.threatNames);
    else this.#threats.addRejection(rejection, what);
  }

  /**
   * Awaits a member's processing; a rejection (with the member named) or a fault is recorded
   * instead of thrown, so the remaining members are still processed. A timeout still throws: the
   * whole file is out of time.
   */
  async capture<T>(work: Promise<T>, what: string): Promise<T | undefined> {
    try {
      return await work;
    } catch (error) {
      if (isDisarmError(error, 'ERR_TIMEOUT')) throw error;
      if (error instanceof Rejection) {
        if (error.reason === 'threat_detected') this.reject(error, what);
        else this.reject(new Rejection(error.reason, `${what}: ${error.message}`));
      } else {
        this.#fault ??= { error };
      }
      return undefined;
    }
  }

  /** Throws the archive's rejection, else its first fault, if any. */
  throwIfLost(): void {
    if (this.#threats.size > 0) throw this.#threats.toRejection('the archive');
    for (const reason of PRECEDENCE) {
      const found = this.#rejections.find((rejection) => rejection.reason === reason);
      if (found) throw found;
    }
    if (this.#fault) throw this.#fault.error;
  }
}

/**
 * A member that was not rebuilt as an archive but holds one (a zip named `.png`, a gzip named
 * `.txt`): after its rejection its content is still walked for threats.
 */
export function hidesArchive(input: FileInput): boolean {
  const kind = sniff(input.bytes);
  return (
    (kind === 'zip' || kind === 'gzip') && formatForFileName(input.fileName)?.family !== 'archive'
  );
}

/** Formats whose data is compressed already: stored, not deflated again, in a rebuilt zip. */
const COMPRESSED_EXTENSIONS = new Set([
  'jpg',
  'jpeg',
  'png',
  'gif',
  'webp',
  'zip',
  'gz',
  'docx',
  'docm',
  'dotx',
  'dotm',
  'xlsx',
  'xlsb',
  'xlsm',
  'xltx',
  'xltm',
  'xlam',
  'pptx',
  'pptm',
  'potx',
  'potm',
  'ppam',
  'ppsx',
  'ppsm',
  'odt',
  'ods',
  'odp',
]);

/** True when a file of this extension gains nothing from deflate. */
export function isCompressedFormat(extension: string): boolean {
  return COMPRESSED_EXTENSIONS.has(extension.toLowerCase());
}

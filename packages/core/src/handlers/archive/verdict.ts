import { Rejection } from '../../_internal/rejection.ts';

/**
 * Collects the outcome of an archive's members. The spec's archive rules: one threat rejects the
 * whole archive with `threat_detected` (every threat's name is collected, so scanning goes on
 * after the first); otherwise the first other rejection decides.
 */
export class ArchiveVerdict {
  readonly #threats = new Set<string>();
  #first: Rejection | undefined;

  /** True once the archive is lost; later members are only scanned. */
  get decided(): boolean {
    return this.#first !== undefined || this.#threats.size > 0;
  }

  addThreats(names: readonly string[]): void {
    for (const name of names) this.#threats.add(name);
  }

  /**
   * Awaits a member's processing; a rejection is recorded (with the member named) instead of
   * thrown. Faults still throw.
   */
  async capture<T>(work: Promise<T>, what: string): Promise<T | undefined> {
    try {
      return await work;
    } catch (error) {
      if (!(error instanceof Rejection)) throw error;
      if (error.reason === 'threat_detected') this.addThreats(error.threatNames);
      else this.#first ??= new Rejection(error.reason, `${what}: ${error.message}`);
      return undefined;
    }
  }

  /** Throws the archive's rejection, if any. */
  throwIfRejected(): void {
    if (this.#threats.size > 0) {
      const names = [...this.#threats];
      throw new Rejection('threat_detected', `the archive contains ${names.join(', ')}`, names);
    }
    if (this.#first) throw this.#first;
  }
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

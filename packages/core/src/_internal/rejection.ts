import type { RejectionReason } from '../reasons.ts';

/**
 * Thrown inside the engine to stop work on a file that must be rejected; caught at the engine
 * boundary and turned into a `rejected` outcome. Never escapes `disarm()`.
 */
export class Rejection extends Error {
  readonly reason: RejectionReason;
  readonly threatNames: readonly string[];
  /** For `threat_detected`: where inside the file each located threat was found (see {@link ThreatReport}). */
  readonly threatLocations: ReadonlyMap<string, string>;

  constructor(
    reason: RejectionReason,
    detail: string,
    threatNames: readonly string[] = [],
    threatLocations: ReadonlyMap<string, string> = new Map(),
  ) {
    super(detail);
    this.name = 'Rejection';
    this.reason = reason;
    this.threatNames = threatNames;
    this.threatLocations = threatLocations;
  }
}

/**
 * The threats found in a container and where: a member of an archive, a part of an office
 * package, a PDF attachment. Its rejection names each threat with the place it was first found
 * in (`the file contains X in part "word/embeddings/oleObject1.bin"`), places inside places
 * joined by ` > `.
 */
export class ThreatReport {
  /** Threat name -> where it was first found; `undefined` for the container's own bytes. */
  readonly #found = new Map<string, string | undefined>();

  get size(): number {
    return this.#found.size;
  }

  /** Records threats found in `where` (e.g. `member "a/b.exe"`), or in the container itself. */
  add(names: readonly string[], where?: string): void {
    for (const name of names) if (!this.#found.has(name)) this.#found.set(name, where);
  }

  /** Records the threats of a `threat_detected` rejection of what is at `where`. */
  addRejection(rejection: Rejection, where: string): void {
    for (const name of rejection.threatNames) {
      const inner = rejection.threatLocations.get(name);
      this.add([name], inner === undefined ? where : `${where} > ${inner}`);
    }
  }

  /**
   * Records `names` found in the container's own bytes at the place `inside` found each (a
   * scanner that unpacks the container itself names no place), then what only `inside` found.
   */
  addPlaced(names: readonly string[], inside: ThreatReport): void {
    for (const name of names) this.add([name], inside.#found.get(name));
    for (const [name, where] of inside.#found) this.add([name], where);
  }

  /** `threat_detected` for everything recorded; `subject` is what the detail says holds them. */
  toRejection(subject: string): Rejection {
    const names = [...this.#found.keys()];
    const locations = new Map<string, string>();
    const described = names.map((name) => {
      const where = this.#found.get(name);
      if (where === undefined) return name;
      locations.set(name, where);
      return `${name} in ${where}`;
    });
    return new Rejection(
      'threat_detected',
      `${subject} contains ${described.join(', ')}`,
      names,
      locations,
    );
  }
}

/** Throws a {@link Rejection}; reads well in guard clauses. */
export function reject(reason: RejectionReason, detail: string): never {
  throw new Rejection(reason, detail);
}

/**
 * What a parsing library's error says about the file, for a rejection's detail. The library's own
 * checks name the fault; a structure it did not foresee fails inside its code as a TypeError,
 * RangeError or ReferenceError whose message ("Cannot read properties of undefined") speaks of
 * the library, not the file: then `unforeseen` is said instead.
 */
export function faultOf(error: unknown, unforeseen: string): string {
  if (
    error instanceof TypeError ||
    error instanceof RangeError ||
    error instanceof ReferenceError
  ) {
    return unforeseen;
  }
  return error instanceof Error ? error.message : String(error);
}

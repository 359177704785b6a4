/** Types of scripts/build-runtime-tree.mjs, for the tests that check the image's tree. */

/** An entry of package-lock.json's `packages` (version 3), as much as the script reads. */
export interface LockEntry {
  readonly link?: boolean;
  readonly resolved?: string;
  readonly os?: readonly string[];
  readonly cpu?: readonly string[];
  readonly dependencies?: Readonly<Record<string, string>>;
  readonly optionalDependencies?: Readonly<Record<string, string>>;
  readonly peerDependencies?: Readonly<Record<string, string>>;
  readonly peerDependenciesMeta?: Readonly<Record<string, { readonly optional?: boolean }>>;
}

/** The workspaces `disarm serve` runs from. */
export const RUNTIME_ROOTS: readonly string[];

/** Lockfile paths of every package reachable from `roots` (see the script). */
export function reachablePackages(
  lock: { readonly packages: Readonly<Record<string, LockEntry>> },
  roots: readonly string[],
): Set<string>;

/** Builds the runtime tree into `dest`, in `work` (a fresh copy of the checkout when omitted). */
export function buildRuntimeTree(dest: string, work?: string): void;

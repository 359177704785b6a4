import type { ZipMember } from '../../_internal/zip-reader.ts';

/** A member's name after checking: `/`-separated, no `.` segments, never escaping the root. */
export interface SafeName {
  readonly path: string;
  readonly isDirectory: boolean;
}

/** Longest member path accepted, in characters. */
export const MAX_MEMBER_PATH_CHARS = 1024;

/** Unix file-type bits (st_mode & S_IFMT). */
const S_IFMT = 0o170000;
const S_IFREG = 0o100000;
const S_IFDIR = 0o040000;
/** FILE_ATTRIBUTE_REPARSE_POINT: NTFS symlinks and junctions. */
const DOS_REPARSE_POINT = 0x400;

/**
 * Checks one member's name and type, returning why it is refused (a `policy_violation` detail) or
 * its safe path. Refused: absolute paths (`/x`, `\x`, `C:`, UNC), `..` segments with either
 * separator, control characters, symlinks and other special files, and names whose extra-field
 * (Unicode Path) form disagrees with the name bytes in a way that changes the path.
 */
export function checkMemberName(member: ZipMember): SafeName | string {
  for (const candidate of new Set([member.name, member.rawName])) {
    const problem = pathProblem(candidate);
    if (problem !== undefined) return problem;
  }
  if (member.unixMode !== undefined && member.unixMode !== 0) {
    const type = member.unixMode & S_IFMT;
    if (type !== 0 && type !== S_IFREG && type !== S_IFDIR) {
      return type === 0o120000
        ? `member "${member.name}" is a symbolic link`
        : `member "${member.name}" is a special file (mode ${type.toString(8)})`;
    }
  }
  if ((member.dosAttributes & DOS_REPARSE_POINT) !== 0) {
    return `member "${member.name}" is an NTFS reparse point (link)`;
  }
  const segments = member.name
    .split(/[/\\]/)
    .filter((segment) => segment !== '' && segment !== '.');
  return { path: segments.join('/'), isDirectory: member.isDirectory };
}

function pathProblem(name: string): string | undefined {
  if (name.length === 0) return 'a member has an empty name';
  if (name.length > MAX_MEMBER_PATH_CHARS) {
    return `a member name is longer than ${MAX_MEMBER_PATH_CHARS} characters`;
  }
  // eslint-disable-next-line no-control-regex -- control characters are what we look for
  if (/[\u0000-\u001f\u007f]/.test(name)) {
    return `member "${printable(name)}" has control characters in its name`;
  }
  if (/^[/\\]/.test(name) || /^[A-Za-z]:/.test(name)) {
    return `member "${name}" has an absolute path`;
  }
  if (name.split(/[/\\]/).some((segment) => segment === '..')) {
    return `member "${name}" escapes the archive with a ".." path segment`;
  }
  const segments = name.split(/[/\\]/).filter((segment) => segment !== '' && segment !== '.');
  if (segments.length === 0) return `member "${name}" has no name`;
  return undefined;
}

function printable(name: string): string {
  // eslint-disable-next-line no-control-regex -- control characters are what we replace
  return name.replace(/[\u0000-\u001f\u007f]/g, '?');
}

/**
 * The key two names collide under on common file systems: Unicode NFC (macOS normalises) and
 * case-folded (Windows and macOS are case-insensitive).
 */
export function collisionKey(path: string): string {
  return path.normalize('NFC').toLowerCase();
}

/**
 * Finds duplicate names (after normalisation) and a file that is also used as a directory
 * (`a` and `a/b`), which extraction tools resolve in surprising ways.
 */
export function findNameConflict(names: readonly SafeName[]): string | undefined {
  const files = new Map<string, string>();
  const directories = new Set<string>();
  for (const name of names) {
    const key = collisionKey(name.path);
    if (name.isDirectory) {
      if (files.has(key)) return `"${name.path}" is both a file and a directory`;
      directories.add(key);
    } else {
      const earlier = files.get(key);
      if (earlier !== undefined) {
        return earlier === name.path
          ? `the archive holds two members named "${name.path}"`
          : `members "${earlier}" and "${name.path}" collide (same name once case and Unicode form are ignored)`;
      }
      if (directories.has(key)) return `"${name.path}" is both a file and a directory`;
      files.set(key, name.path);
    }
    const parts = key.split('/');
    for (let i = 1; i < parts.length; i += 1) {
      const parent = parts.slice(0, i).join('/');
      const parentFile = files.get(parent);
      if (parentFile !== undefined) return `"${parentFile}" is both a file and a directory`;
      directories.add(parent);
    }
  }
  return undefined;
}

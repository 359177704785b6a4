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
 * its safe path. Refused: every {@link pathProblem} of the name bytes and of the Info-ZIP Unicode
 * Path form, symlinks and other special files, NTFS reparse points.
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
  return { path: segmentsOf(member.name).join('/'), isDirectory: member.isDirectory };
}

/** Longest path segment Windows and most Unix file systems create, in characters. */
const MAX_SEGMENT_CHARS = 255;

/**
 * Characters no name may hold: C0, DEL and C1 controls (`Cc`), line and paragraph separators,
 * and invisible formatting characters (`Cf`: bidi embeddings, overrides and isolates U+202A-202E
 * and U+2066-2069, the marks U+200E/U+200F/U+061C, zero-width space, word joiner, BOM, tag
 * characters) that make `exe.png` display for `gnp.exe`. ZWNJ and ZWJ (U+200C/U+200D) are left
 * alone: Persian and Indic names and emoji need them.
 */
const HIDDEN_CHARACTER = /(?![\u200c\u200d])[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;

/**
 * Characters Win32 refuses in a name (`<>"|?*`) and `:`, which on NTFS names an alternate data
 * stream (`evil.exe:x.png` writes into `evil.exe`) or a drive.
 */
const WINDOWS_FORBIDDEN = /[<>"|?*:]/;

/**
 * Win32 device names: a segment whose part before the first dot (trailing spaces ignored) is one
 * of these opens the device, not a file, whatever its extension (`CON.png`, `aux.tar.gz`).
 * Windows also maps the superscript digits ¹²³ in `COM`/`LPT` names.
 */
const WINDOWS_DEVICE =
  /^(con|prn|aux|nul|conin\$|conout\$|clock\$|com[0-9\u00b9\u00b2\u00b3]|lpt[0-9\u00b9\u00b2\u00b3])$/i;

/**
 * The one rule set for names of archive members (zip entries and the gzip FNAME): why `name` may
 * not be extracted as it is, or `undefined` when it may. Either separator counts. Refused:
 * empty names and names without a segment, over-long names and segments, absolute paths
 * (`/x`, `\\x`, `C:`, UNC), `..` segments, control, bidi and invisible formatting characters,
 * and what Windows would turn into something else: `:` streams, `<>"|?*`, device names
 * (`CON`, `NUL.txt`, `sub/aux.png`, `COM¹`), segments ending in a dot or a space.
 */
export function pathProblem(name: string): string | undefined {
  if (name.length === 0) return 'a member has an empty name';
  if (name.length > MAX_MEMBER_PATH_CHARS) {
    return `a member name is longer than ${MAX_MEMBER_PATH_CHARS} characters`;
  }
  const hidden = HIDDEN_CHARACTER.exec(name);
  if (hidden) {
    const code = (hidden[0].codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0');
    return `member "${printable(name)}" has a control or invisible formatting character (U+${code}) in its name`;
  }
  if (/^[/\\]/.test(name) || /^[A-Za-z]:/.test(name)) {
    return `member "${name}" has an absolute path`;
  }
  const parts = name.split(/[/\\]/);
  if (parts.some((segment) => segment === '..')) {
    return `member "${name}" escapes the archive with a ".." path segment`;
  }
  const forbidden = WINDOWS_FORBIDDEN.exec(name);
  if (forbidden) {
    return forbidden[0] === ':'
      ? `member "${name}" has ":" in its name (an NTFS alternate data stream or drive)`
      : `member "${name}" has "${forbidden[0]}" in its name, which Windows does not allow`;
  }
  const segments = segmentsOf(name);
  if (segments.length === 0) return `member "${name}" has no name`;
  for (const segment of segments) {
    if (segment.length > MAX_SEGMENT_CHARS) {
      return `member "${name}" has a path segment longer than ${MAX_SEGMENT_CHARS} characters`;
    }
    if (/[. ]$/.test(segment)) {
      return `member "${name}" has a path segment ending in a dot or a space, which Windows drops`;
    }
    if (WINDOWS_DEVICE.test((segment.split('.')[0] ?? '').trimEnd())) {
      return `member "${name}" uses the Windows device name "${segment}"`;
    }
  }
  return undefined;
}

function segmentsOf(name: string): string[] {
  return name.split(/[/\\]/).filter((segment) => segment !== '' && segment !== '.');
}

function printable(name: string): string {
  return name.replace(new RegExp(HIDDEN_CHARACTER.source, 'gu'), '?');
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

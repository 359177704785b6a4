import { checkMetafile } from '../image/metafile/metafile.ts';
import { classifyField } from '../office/fields.ts';
import type { DetectedFile, HandlerOutput } from '../types.ts';
import { VerifyFailure } from '../types.ts';
import { MAX_GROUP_DEPTH } from './rebuild.ts';
import { FORMATTING_WORDS, KEPT_DESTINATIONS, KEPT_SYMBOLS, PICTURE_KINDS } from './words.ts';

/**
 * One lexeme of the written file, read with a regular expression of its own rather than the
 * rebuild's tokenizer: a group brace, a control word, a control symbol, a hex escape, or text.
 */
const LEXEME = /\{|\}|\\([a-zA-Z]{1,32})(-?\d{1,10})? ?|\\'([0-9a-f]{2})|\\([^a-zA-Z'])|[^\\{}]+/gy;

/** PNG and JPEG signatures, for pictures the image handler wrote. */
const RASTER_MAGIC: Readonly<Record<string, string>> = { png: '89504e47', jpg: 'ffd8ff' };

interface Group {
  /** The destination the group opened with, if any. */
  name: string | undefined;
  /** Text of a field instruction, or the hex digits of a picture. */
  content: string;
  /** A picture's kind, once named. */
  kind: string | undefined;
  /**
   * The field instruction this group's text belongs to: the group itself once it is named
   * `\\fldinst`, else its parent's. Word reads an instruction through its nested groups (formatting
   * runs split it: `{\\*\\fldinst {\\b DDE}{AUTO} …}`), so it is judged whole, as the rebuild does.
   */
  instruction: Group | undefined;
}

/**
 * RTF checks of verify before release, on the written bytes re-read by a lexer of its own:
 * 7-bit text beginning `{\rtf1`; groups balanced, none deeper than the rebuild allows, nothing
 * after the last; every control word and destination on the allowlist (so no `\object`,
 * `\objdata`, `\template`, `\bin`); every field instruction one that may stay; every picture of a
 * rebuilt kind, its data hex, metafiles read back.
 * @throws {VerifyFailure} naming the check that failed.
 */
export function verifyRtf(output: HandlerOutput, _input: DetectedFile): Promise<void> {
  try {
    checkRtf(output.bytes);
    return Promise.resolve();
  } catch (error) {
    return Promise.reject(error instanceof Error ? error : new Error(String(error)));
  }
}

function fail(check: string, message: string): never {
  throw new VerifyFailure(`rtf.${check}`, message);
}

function checkRtf(bytes: Uint8Array): void {
  if (bytes.some((byte) => byte >= 0x80)) fail('ascii', 'the written file is not 7-bit text');
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1');
  if (!text.startsWith('{\\rtf1')) fail('header', 'the written file does not begin {\\rtf1');
  const groups: Group[] = [];
  let starred = false;
  let fresh = false;
  LEXEME.lastIndex = 0;
  while (LEXEME.lastIndex < text.length) {
    const at = LEXEME.lastIndex;
    const match = LEXEME.exec(text);
    if (!match) fail('syntax', `nothing readable at offset ${at}`);
    const lexeme = match[0];
    const group = groups.at(-1);
    if (lexeme === '{') {
      if (groups.length === 0 && at !== 0) fail('groups', 'content follows the document group');
      groups.push({
        name: undefined,
        content: '',
        kind: undefined,
        instruction: group?.instruction,
      });
      if (groups.length > MAX_GROUP_DEPTH) fail('groups', 'groups nest too deep');
      fresh = true;
      starred = false;
      continue;
    }
    if (!group) fail('groups', `text outside the document group at offset ${at}`);
    if (lexeme === '}') {
      closeGroup(groups.pop() ?? group);
      fresh = false;
      continue;
    }
    const [, word, parameter, , symbol] = match;
    if (word !== undefined) {
      checkWord(word, parameter, group, fresh, starred);
    } else if (symbol === '*') {
      if (!fresh) fail('syntax', `\\* inside a group at offset ${at}`);
      starred = true;
      continue;
    } else if (symbol !== undefined && !KEPT_SYMBOLS.has(symbol)) {
      fail('symbol', `control symbol \\${symbol} at offset ${at}`);
    } else if (group.name === 'pict') {
      if (match[3] !== undefined || symbol !== undefined || /[^0-9a-f\s]/.test(lexeme)) {
        fail('picture', `a picture holds more than hex digits at offset ${at}`);
      }
      group.content += lexeme.replace(/\s/g, '');
    } else if (group.instruction) {
      group.instruction.content += symbol ?? (match[3] !== undefined ? '?' : lexeme);
    }
    fresh = false;
    starred = false;
  }
  if (groups.length > 0) fail('groups', 'the document group is not closed');
}

function checkWord(
  word: string,
  parameter: string | undefined,
  group: Group,
  fresh: boolean,
  starred: boolean,
): void {
  const destination = fresh && KEPT_DESTINATIONS.has(word);
  if (starred && !destination) fail('destination', `\\*\\${word} is not a kept destination`);
  if (destination) {
    group.name = word;
    if (word === 'fldinst') group.instruction = group;
    return;
  }
  if (group.name === 'pict' && PICTURE_KINDS.has(word)) {
    if (group.kind !== undefined) fail('picture', 'a picture names two kinds');
    group.kind = PICTURE_KINDS.get(word);
    return;
  }
  if (!FORMATTING_WORDS.has(word)) {
    fail('word', `control word \\${word}${parameter ?? ''} is not on the allowlist`);
  }
}

function closeGroup(group: Group): void {
  if (group.name === 'fldinst') {
    const refused = classifyField(group.content.trim());
    if (refused !== undefined) {
      fail('field', `a field instruction that is removed as ${refused} is kept`);
    }
  }
  if (group.name !== 'pict') return;
  const kind = group.kind;
  if (kind === undefined) fail('picture', 'a picture names no kind');
  const data = Buffer.from(group.content, 'hex');
  if (kind === 'emf' || kind === 'wmf') {
    const fault = checkMetafile(data, kind);
    if (fault !== undefined) fail('metafile', `a ${kind} picture: ${fault}`);
    return;
  }
  const magic = RASTER_MAGIC[kind];
  if (magic !== undefined && !group.content.startsWith(magic)) {
    fail('picture', `a ${kind} picture does not begin as one`);
  }
}

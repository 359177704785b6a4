import { Rejection, reject } from '../../_internal/rejection.ts';
import { FindingTally } from '../../findings.ts';
import type { FindingKind } from '../../findings.ts';
import { rebuildMetafile } from '../image/metafile/metafile.ts';
import { classifyField } from '../office/fields.ts';
import type { DetectedFile, EngineContext, HandlerOutput } from '../types.ts';
import { hexDigitValue, RtfTokenizer } from './tokenize.ts';
import type { RtfToken } from './tokenize.ts';
import {
  FORMATTING_WORDS,
  KEPT_DESTINATIONS,
  KEPT_SYMBOLS,
  LINKED_OBJECT_WORDS,
  PICTURE_KINDS,
  PICTURE_WORDS,
  REMOVED_DESTINATIONS,
  SILENT_DESTINATIONS,
} from './words.ts';

/**
 * Deepest group nesting kept. RTF 1.9.1 sets no limit, but nothing Word or LibreOffice writes
 * comes near it (nested tables nest by `\itap`, not by groups); thousands of nested groups are
 * how exploit documents exhaust or evade readers (CVE-2010-3333 spread its payload through
 * nested groups). Same bound as the engine's XML depth (`MAX_XML_DEPTH`).
 */
export const MAX_GROUP_DEPTH = 256;

/**
 * Most characters of a field instruction read: Word's own instructions are short (a HYPERLINK
 * with its URL, a TOC switch list); a longer one is judged as what it begins with plus the fact
 * that it goes on, and removed.
 */
export const MAX_INSTRUCTION_CHARS = 8192;

/** Tokens between two deadline checks. */
const TOKENS_PER_CHECK = 65_536;

/** Hex digits per line of a written picture (Word writes 128). */
const HEX_LINE_CHARS = 128;

/** Signature of a placeable WMF header, which `\wmetafile` data does not carry (RTF 1.9.1). */
const PLACEABLE_WMF_KEY = 0x9ac6cdd7;
const PLACEABLE_WMF_BYTES = 22;
const BMP_FILE_HEADER_BYTES = 14;

type PictureKind = 'png' | 'jpg' | 'emf' | 'wmf' | 'bmp';

/** What a group is, which decides what of it is written. */
type Mode =
  /** Written as read, word by word through the allowlist. */
  | 'keep'
  /** Read to its end and left out. */
  | 'drop'
  /** `\field`: written once its instruction is judged. */
  | 'field'
  /** `\fldinst`: written, then taken back if the instruction is refused. */
  | 'instruction'
  /** `\object` or `\shp`: only its result (and a shape's text) is written. */
  | 'container'
  /** `\info`: only its allowed fields are written. */
  | 'info'
  /** `\pict`: gathered, rebuilt through the image handlers, written at its end. */
  | 'picture'
  /** A plain group inside a picture: its digits are the picture's. */
  | 'picture-data';

interface Picture {
  readonly words: string[];
  kind: PictureKind | undefined;
  /** A kind word that names a format not rebuilt (`\macpict`, `\wbitmap`, `\pmmetafile`). */
  unknownKind: boolean;
  kindParameter: number | undefined;
  readonly data: HexBuffer;
  binary: Uint8Array | undefined;
  /** Anything but hex digits and white space among the data. */
  damaged: boolean;
}

interface Field {
  /** Index in the output of the field's opening, written once the instruction is judged. */
  readonly opening: number;
  words: string;
  decision: 'undecided' | 'kept' | 'neutralised';
}

interface Frame {
  mode: Mode;
  /** Whether `{` was written for this group (a `}` is then owed). */
  opened: boolean;
  /** No token read yet: the next one may name the destination. */
  first: boolean;
  starred: boolean;
  field?: Field;
  /** The instruction being read by the nearest `\fldinst`. */
  instruction?: {
    text: string;
    readonly start: number;
    readonly field: Field | undefined;
    /** A destination began inside the instruction: what Word makes of it is not judged. */
    spoilt: boolean;
    /** Whether the output ended in a control word when the instruction began. */
    readonly afterWord: boolean;
  };
  picture?: Picture;
  /** For a container: its removed content is reported as this kind at its end. */
  container?: { kind: FindingKind | undefined; readonly kept: ReadonlySet<string> };
}

/** Information group fields kept, as OOXML core and extended properties are (see `content.ts`). */
const INFO_FIELDS: ReadonlySet<string> = new Set(
  (
    'title subject author manager company operator category keywords comment doccomm creatim ' +
    'revtim printim buptim version vern edmins nofpages nofwords nofchars nofcharsws id'
  ).split(' '),
);

/**
 * Destinations that are containers: of their child groups only these are kept, as plain groups,
 * and their own words are left out. An object keeps its result (RTF 1.9.1 "Objects": the last
 * picture or text Word showed of it, as OOXML keeps an object's preview picture); a shape keeps
 * its result for readers without shapes, and the text of a text box (`\shptxt`), written where
 * the shape was, since Word's result of a text box (`\do`) is a drawing object not kept.
 */
const CONTAINERS: ReadonlyMap<string, ReadonlySet<string>> = new Map([
  ['object', new Set(['result'])],
  ['shp', new Set(['shprslt', 'shpinst'])],
  ['shpgrp', new Set(['shprslt', 'shpinst'])],
  // A group's shapes are inside its instructions.
  ['shpinst', new Set(['shptxt', 'shp', 'shpgrp'])],
]);

/** Picture kind words of formats not rebuilt: the picture goes (RTF 1.9.1 "Pictures"). */
const UNREBUILT_PICTURE_WORDS: ReadonlySet<string> = new Set(['macpict', 'pmmetafile', 'wbitmap']);

/** Field words of a kept field (RTF 1.9.1 "Fields"). */
const FIELD_WORDS: ReadonlySet<string> = new Set(['fldlock', 'flddirty', 'fldedit', 'fldpriv']);

/**
 * Rebuilds an RTF document from its allowlisted control words and destinations. Objects go,
 * their result picture or text stays; fields whose instruction runs or fetches something are
 * replaced by their result; pictures are rebuilt through the image and metafile handlers.
 *
 * @throws {Rejection} `invalid_file` when the file is no RTF document, `policy_violation` when
 *   its groups nest deeper than {@link MAX_GROUP_DEPTH}.
 */
export async function rebuildRtf(
  input: DetectedFile,
  context: EngineContext,
): Promise<HandlerOutput> {
  const writer = new RtfWriter(input, context);
  return writer.run();
}

class RtfWriter {
  readonly #input: DetectedFile;
  readonly #context: EngineContext;
  readonly #tokens: RtfTokenizer;
  readonly #findings = new FindingTally();
  readonly #out: string[] = [];
  readonly #frames: Frame[] = [];
  /** A control word was the last thing written: text written next needs a delimiting space. */
  #afterWord = false;

  constructor(input: DetectedFile, context: EngineContext) {
    this.#input = input;
    this.#context = context;
    this.#tokens = new RtfTokenizer(input.bytes);
  }

  async run(): Promise<HandlerOutput> {
    this.#header();
    let count = 0;
    for (let token = this.#tokens.next(); token; token = this.#tokens.next()) {
      count += 1;
      if (count % TOKENS_PER_CHECK === 0) this.#context.deadline.check();
      if (token.kind === 'close') {
        await this.#close();
        if (this.#frames.length === 0) {
          this.#trailer();
          break;
        }
        continue;
      }
      this.#token(token);
    }
    // A file that ends inside groups is closed by Word and LibreOffice as if their braces were
    // there; so is it here.
    while (this.#frames.length > 0) await this.#close();
    return {
      bytes: new TextEncoder().encode(this.#out.join('')),
      findings: this.#findings.toArray(),
    };
  }

  /** `{\rtf1`: Word accepts `\rtf` with no version or junk after it; the output says `\rtf1`. */
  #header(): void {
    const open = this.#tokens.next();
    const word = this.#tokens.next();
    if (open?.kind !== 'open' || word?.kind !== 'word' || !word.name.startsWith('rtf')) {
      reject('invalid_file', 'the file does not begin with an {\\rtf group');
    }
    this.#frames.push({ mode: 'keep', opened: true, first: false, starred: false });
    this.#write('{\\rtf1');
    // Text right after the header (digits above all) must not join `\rtf1` as its parameter.
    this.#afterWord = true;
  }

  /** Whatever follows the document's closing brace: Word reads no further. */
  #trailer(): void {
    const rest = this.#input.bytes.subarray(this.#tokens.offset);
    if (rest.some((byte) => byte > 0x20)) this.#findings.add('trailing-data');
  }

  #frame(): Frame {
    const frame = this.#frames.at(-1);
    if (!frame) throw new TypeError('no open group');
    return frame;
  }

  #token(token: RtfToken): void {
    if (token.kind === 'open') {
      this.#open();
      return;
    }
    const frame = this.#frame();
    if (frame.first && token.kind === 'symbol' && token.symbol === '*') {
      frame.starred = true;
      return;
    }
    if (frame.first) {
      frame.first = false;
      if (this.#destination(frame, token)) return;
    }
    switch (frame.mode) {
      case 'drop':
        return;
      case 'picture':
      case 'picture-data':
        this.#pictureToken(frame, token);
        return;
      case 'container':
        this.#containerToken(frame, token);
        return;
      case 'field':
        if (token.kind === 'word' && FIELD_WORDS.has(token.name) && frame.field) {
          frame.field.words += `\\${token.name}`;
        }
        return;
      case 'info':
        // Information fields are destinations (`{\\author …}`, RTF 1.9.1 "Information group"),
        // kept as child groups in #destination. A field's word loose in the group is no field,
        // and verify refuses it there: it goes.
        return;
      case 'keep':
      case 'instruction':
        this.#content(frame, token);
        return;
    }
  }

  #open(): void {
    const parent = this.#frame();
    if (this.#frames.length >= MAX_GROUP_DEPTH) {
      reject('policy_violation', `groups nest deeper than ${MAX_GROUP_DEPTH} levels`);
    }
    // A child of a container, field or information group is kept only once its destination
    // says it may be (see #destination).
    const inherited: Mode =
      parent.mode === 'picture' || parent.mode === 'picture-data'
        ? 'picture-data'
        : parent.mode === 'keep' || parent.mode === 'instruction'
          ? 'keep'
          : 'drop';
    const frame: Frame = { mode: inherited, opened: false, first: true, starred: false };
    if (parent.instruction) frame.instruction = parent.instruction;
    if (parent.picture) frame.picture = parent.picture;
    this.#frames.push(frame);
  }

  /**
   * Decides what a group is from its first token. Returns whether the token was the
   * destination's name (and so is consumed).
   */
  #destination(frame: Frame, token: RtfToken): boolean {
    const parent = this.#frames.at(-2);
    const name = token.kind === 'word' ? token.name : undefined;
    if (parent?.mode === 'picture' || parent?.mode === 'picture-data') {
      // Inside a picture only plain groups (white space, obfuscation) carry its data.
      if (frame.starred || (name !== undefined && !FORMATTING_WORDS.has(name))) {
        frame.mode = 'drop';
        return true;
      }
      return false;
    }
    if (parent?.mode === 'container') {
      const kept = name !== undefined && parent.container?.kept.has(name) === true;
      if (kept && CONTAINERS.has(name)) return this.#named(frame, name, undefined);
      // A kept child is plain content, opened once it writes something (as above).
      frame.mode = kept ? 'keep' : 'drop';
      return true;
    }
    if (parent?.mode === 'field') {
      return this.#fieldChild(parent, frame, name);
    }
    if (parent?.mode === 'info') {
      if (name !== undefined && INFO_FIELDS.has(name)) {
        frame.mode = 'keep';
        this.#openGroup(frame, `${frame.starred ? '\\*' : ''}\\${name}`);
      } else if (name === undefined || !SILENT_DESTINATIONS.has(name)) {
        this.#findings.add(REMOVED_DESTINATIONS.get(name ?? '') ?? 'document-metadata');
      }
      return true;
    }
    if (frame.mode === 'drop') return true;
    if (name === undefined) {
      if (frame.starred) {
        frame.mode = 'drop';
        return true;
      }
      return false;
    }
    const destination = this.#named(
      frame,
      name,
      token.kind === 'word' ? token.parameter : undefined,
    );
    // A destination that begins inside a field instruction (`{\\title …}` in `\\fldinst`): what
    // Word makes of the instruction is no longer judged, so it goes, as #dropRest does.
    if (destination && frame.instruction) frame.instruction.spoilt = true;
    return destination;
  }

  #named(frame: Frame, name: string, parameter: number | undefined): boolean {
    const kept = CONTAINERS.get(name);
    if (kept !== undefined) {
      frame.mode = 'container';
      frame.container = { kind: name === 'object' ? 'embedded-object' : undefined, kept };
      return true;
    }
    if (name === 'field') {
      frame.mode = 'field';
      // Nothing is written yet (the opening is decided with the instruction): whether the last
      // write ended in a control word stays as it was.
      frame.field = { opening: this.#out.push('') - 1, words: '', decision: 'undecided' };
      return true;
    }
    if (name === 'fldinst') {
      // An instruction outside a field's own group: Word may still read it; it goes.
      this.#findings.add('hidden-data');
      frame.mode = 'drop';
      return true;
    }
    if (name === 'fldrslt') {
      // A result outside a field is plain content: like any group without a destination, its
      // group is written only once it writes something (#ensureOpen), so output rebuilds to itself.
      frame.mode = 'keep';
      return true;
    }
    if (name === 'pict') {
      frame.mode = 'picture';
      frame.picture = {
        words: [],
        kind: undefined,
        unknownKind: false,
        kindParameter: undefined,
        data: new HexBuffer(),
        binary: undefined,
        damaged: false,
      };
      return true;
    }
    if (name === 'info') {
      frame.mode = 'info';
      this.#openGroup(frame, '\\info');
      return true;
    }
    if (KEPT_DESTINATIONS.has(name)) {
      frame.mode = 'keep';
      const value = parameter === undefined ? '' : String(parameter);
      this.#openGroup(frame, `${frame.starred ? '\\*' : ''}\\${name}${value}`);
      return true;
    }
    const removed = REMOVED_DESTINATIONS.get(name);
    if (removed !== undefined) {
      this.#findings.add(removed);
      frame.mode = 'drop';
      return true;
    }
    if (SILENT_DESTINATIONS.has(name)) {
      frame.mode = 'drop';
      return true;
    }
    if (frame.starred) {
      // RTF 1.9.1: a reader skips a `\*` destination it does not know; so does the rebuild,
      // and says so, since such a group can hold anything.
      this.#findings.add('hidden-data');
      frame.mode = 'drop';
      return true;
    }
    return false;
  }

  #fieldChild(parent: Frame, frame: Frame, name: string | undefined): boolean {
    const field = parent.field;
    if (!field) throw new TypeError('a field group without its state');
    if (name === 'fldinst' && field.decision === 'undecided') {
      frame.mode = 'instruction';
      const start = this.#out.length;
      frame.instruction = { text: '', start, field, spoilt: false, afterWord: this.#afterWord };
      this.#openGroup(frame, '\\*\\fldinst');
      return true;
    }
    if (name === 'fldrslt') {
      if (field.decision === 'undecided') this.#decide(field, undefined);
      frame.mode = 'keep';
      // A neutralised field's result is plain content: its group opens only if it writes
      // something, as any group without a destination does, so the output rebuilds to itself.
      if (field.decision === 'kept') this.#openGroup(frame, '\\fldrslt');
      return true;
    }
    // A second instruction, or anything else in the field's group: readers do not show it.
    if (name === 'fldinst') this.#findings.add('hidden-data');
    frame.mode = 'drop';
    return true;
  }

  /** Writes a field's opening once its instruction is judged (`refused`: the finding). */
  #decide(field: Field, refused: FindingKind | undefined): void {
    field.decision = refused === undefined ? 'kept' : 'neutralised';
    // A neutralised field leaves no group of its own: only its result's content remains.
    this.#out[field.opening] = refused === undefined ? `{\\field${field.words}` : '';
  }

  #openGroup(frame: Frame, opening: string): void {
    frame.opened = true;
    this.#write(`{${opening}`);
    this.#afterWord = opening !== '';
  }

  #containerToken(frame: Frame, token: RtfToken): void {
    if (token.kind === 'word' && LINKED_OBJECT_WORDS.has(token.name) && frame.container) {
      frame.container.kind = 'external-relationship';
    }
  }

  #content(frame: Frame, token: RtfToken): void {
    switch (token.kind) {
      case 'word':
        this.#contentWord(frame, token.name, token.parameter);
        return;
      case 'symbol':
        if (KEPT_SYMBOLS.has(token.symbol)) {
          this.#ensureOpen(frame);
          this.#write(`\\${token.symbol}`);
          this.#afterWord = false;
          this.#instruction(frame, token.symbol);
        }
        return;
      case 'hex':
        this.#ensureOpen(frame);
        this.#write(`\\'${token.byte.toString(16).padStart(2, '0')}`);
        this.#afterWord = false;
        this.#instruction(frame, String.fromCharCode(token.byte));
        return;
      case 'text':
        this.#text(frame, token.bytes);
        return;
      case 'bin':
        // Raw bytes outside a picture: data no reader shows as text.
        this.#findings.add('hidden-data');
        return;
      case 'open':
      case 'close':
        return;
    }
  }

  #contentWord(frame: Frame, name: string, parameter: number | undefined): void {
    const removed = REMOVED_DESTINATIONS.get(name);
    if (removed !== undefined || CONTAINERS.has(name) || name === 'pict') {
      // A destination word inside a group (not at its start) makes the rest of the group that
      // destination for Word: the rest goes.
      if (removed !== undefined) this.#findings.add(removed);
      if (name === 'object') this.#findings.add('embedded-object');
      if (name === 'pict') this.#findings.add('hidden-data');
      this.#dropRest(frame);
      return;
    }
    if (SILENT_DESTINATIONS.has(name)) {
      this.#dropRest(frame);
      return;
    }
    if (!FORMATTING_WORDS.has(name)) return;
    this.#ensureOpen(frame);
    this.#word({ name, parameter });
    if (name === 'tab') this.#instruction(frame, '\t');
    if (name === 'u' && parameter !== undefined) {
      this.#instruction(
        frame,
        String.fromCharCode(parameter < 0 ? parameter + 0x10000 : parameter),
      );
    }
  }

  /**
   * Leaves out the rest of a group. In a field instruction the instruction goes whole, and the
   * field with it: its group is still read to its end, to be judged there.
   */
  #dropRest(frame: Frame): void {
    if (frame.instruction) frame.instruction.spoilt = true;
    if (frame.mode !== 'instruction') frame.mode = 'drop';
  }

  #word(word: { readonly name: string; readonly parameter: number | undefined }): void {
    this.#write(`\\${word.name}${word.parameter === undefined ? '' : String(word.parameter)}`);
    this.#afterWord = true;
    if (word.name === 'par') {
      this.#write('\n');
      this.#afterWord = false;
    }
  }

  #text(frame: Frame, bytes: Uint8Array): void {
    const raw = latin1(bytes);
    // Printable ASCII goes as it is; a tab is `\tab`, a byte of the code page `\'hh`, and other
    // control characters, which are not text in RTF 1.9.1 and readers skip, go. A delimiting
    // space follows a control word only where the text would otherwise run on into it, exactly
    // as the word would be written when read back, so the output rebuilds to itself.
    // Only tabs, printable ASCII and code-page bytes are written; nothing else opens the group.
    if (!/[\t\x20-\x7e\x80-\xff]/.test(raw)) return;
    this.#ensureOpen(frame);
    let text = '';
    let afterWord = this.#afterWord;
    for (const char of raw) {
      const code = char.charCodeAt(0);
      if (code >= 0x20 && code <= 0x7e) {
        text += afterWord && /[A-Za-z0-9 -]/.test(char) ? ` ${char}` : char;
        afterWord = false;
      } else if (code === 0x09) {
        text += '\\tab';
        afterWord = true;
      } else if (code >= 0x80) {
        text += `\\'${code.toString(16)}`;
        afterWord = false;
      }
    }
    this.#write(text);
    this.#afterWord = afterWord;
    if (frame.instruction) this.#instruction(frame, raw);
  }

  /** A plain group is written when it first has something to write. */
  #ensureOpen(frame: Frame): void {
    if (!frame.opened) this.#openGroup(frame, '');
  }

  #instruction(frame: Frame, text: string): void {
    const instruction = frame.instruction;
    if (!instruction || instruction.text.length > MAX_INSTRUCTION_CHARS) return;
    instruction.text += text;
  }

  #write(text: string): void {
    this.#out.push(text);
  }

  async #close(): Promise<void> {
    const frame = this.#frames.pop();
    if (!frame) return;
    if (frame.mode === 'picture') {
      await this.#picture(frame);
    } else if (frame.mode === 'container') {
      if (frame.container?.kind !== undefined) this.#findings.add(frame.container.kind);
    } else if (frame.mode === 'field' && frame.field) {
      if (frame.field.decision === 'undecided') this.#decide(frame.field, undefined);
      if (frame.field.decision === 'kept') {
        this.#write('}');
        this.#afterWord = false;
      }
      return;
    } else if (frame.mode === 'instruction' && frame.instruction?.field) {
      const { text, start, field, spoilt, afterWord } = frame.instruction;
      const refused =
        text.length > MAX_INSTRUCTION_CHARS || spoilt
          ? (classifyField(text.trim()) ?? 'hidden-data')
          : classifyField(text.trim());
      if (refused !== undefined) {
        this.#findings.add(refused);
        this.#out.length = start;
        this.#decide(field, refused);
        // What was written before the instruction is the end of the output again.
        this.#afterWord = afterWord;
        return;
      }
      this.#decide(field, undefined);
    }
    if (frame.opened) {
      this.#write('}');
      this.#afterWord = false;
    }
  }

  #pictureToken(frame: Frame, token: RtfToken): void {
    const picture = frame.picture;
    if (!picture) return;
    if (token.kind === 'text') {
      for (const byte of token.bytes) {
        const value = hexDigitValue(byte);
        if (value >= 0) picture.data.push(value);
        else if (byte > 0x20) picture.damaged = true;
      }
      return;
    }
    if (token.kind === 'bin') {
      if (picture.binary !== undefined) picture.damaged = true;
      picture.binary = token.bytes;
      return;
    }
    if (token.kind !== 'word' || frame.mode !== 'picture') return;
    const kind = PICTURE_KINDS.get(token.name);
    if (kind !== undefined) {
      if (picture.kind !== undefined && picture.kind !== kind) picture.damaged = true;
      picture.kind = kind;
      picture.kindParameter = token.parameter;
    } else if (UNREBUILT_PICTURE_WORDS.has(token.name)) {
      picture.unknownKind = true;
    } else if (PICTURE_WORDS.has(token.name)) {
      picture.words.push(`\\${token.name}${token.parameter ?? ''}`);
    }
  }

  async #picture(frame: Frame): Promise<void> {
    const picture = frame.picture;
    if (!picture) return;
    const data = picture.binary ?? picture.data.bytes();
    if (picture.binary !== undefined && picture.data.length > 0) picture.damaged = true;
    const kind = picture.unknownKind || picture.damaged ? undefined : picture.kind;
    const rebuilt = kind === undefined ? undefined : await this.#rebuildPicture(kind, data);
    if (rebuilt === undefined) {
      // A picture of a format not rebuilt, damaged or refused by its handler is not passed on.
      if (data.length > 0 || picture.kind !== undefined) this.#findings.add('hidden-data');
      return;
    }
    const kindWord =
      kind === 'wmf'
        ? `\\wmetafile${picture.kindParameter ?? 8}`
        : kind === 'bmp'
          ? '\\dibitmap0'
          : `\\${kind === 'png' ? 'pngblip' : kind === 'jpg' ? 'jpegblip' : 'emfblip'}`;
    this.#write(`{\\pict${picture.words.join('')}${kindWord}\n`);
    const hex = Buffer.from(rebuilt.buffer, rebuilt.byteOffset, rebuilt.byteLength).toString('hex');
    for (let at = 0; at < hex.length; at += HEX_LINE_CHARS) {
      this.#write(`${hex.slice(at, at + HEX_LINE_CHARS)}\n`);
    }
    this.#write('}');
    this.#afterWord = false;
  }

  async #rebuildPicture(kind: PictureKind, data: Uint8Array): Promise<Uint8Array | undefined> {
    const context = this.#context;
    try {
      if (kind === 'emf' || kind === 'wmf') {
        context.deadline.check();
        const rebuilt = rebuildMetafile(data, kind, context.limits, this.#findings);
        return kind === 'wmf' && isPlaceable(rebuilt)
          ? rebuilt.subarray(PLACEABLE_WMF_BYTES)
          : rebuilt;
      }
      const bytes = kind === 'bmp' ? bmpOfDib(data) : data;
      const member = await context.processMember(
        { bytes, fileName: `picture.${kind}` },
        this.#input.bytes,
      );
      this.#findings.addAll(member.findings);
      return kind === 'bmp' ? member.bytes.subarray(BMP_FILE_HEADER_BYTES) : member.bytes;
    } catch (error) {
      if (!(error instanceof Rejection)) throw error;
      if (error.reason === 'threat_detected' || error.reason === 'file_too_large') throw error;
      return undefined;
    }
  }
}

/** Bytes as Latin-1 text, one character per byte. */
function latin1(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1');
}

function isPlaceable(bytes: Uint8Array): boolean {
  return (
    bytes.length > PLACEABLE_WMF_BYTES &&
    new DataView(bytes.buffer, bytes.byteOffset, 4).getUint32(0, true) === PLACEABLE_WMF_KEY
  );
}

/**
 * A BMP file around `\dibitmap` data, a packed DIB (RTF 1.9.1: "a device-independent bitmap"):
 * the file header's pixel offset counts the info header, its bit-field masks and its palette.
 */
function bmpOfDib(dib: Uint8Array): Uint8Array {
  if (dib.length < 40) reject('invalid_file', 'a \\dibitmap picture shorter than its header');
  const view = new DataView(dib.buffer, dib.byteOffset, dib.byteLength);
  const headerBytes = view.getUint32(0, true);
  const bitCount = view.getUint16(14, true);
  const compression = view.getUint32(16, true);
  const used = view.getUint32(32, true);
  if (headerBytes < 40 || headerBytes > dib.length) {
    reject('invalid_file', 'a \\dibitmap picture with a header of an unknown size');
  }
  const masks = headerBytes === 40 && (compression === 3 || compression === 6) ? 12 : 0;
  const palette = (used > 0 ? used : bitCount <= 8 ? 2 ** bitCount : 0) * 4;
  const file = new Uint8Array(BMP_FILE_HEADER_BYTES + dib.length);
  const header = new DataView(file.buffer);
  file[0] = 0x42;
  file[1] = 0x4d;
  header.setUint32(2, file.length, true);
  header.setUint32(10, BMP_FILE_HEADER_BYTES + headerBytes + masks + palette, true);
  file.set(dib, BMP_FILE_HEADER_BYTES);
  return file;
}

/** Hex digits decoded into bytes as they come, in a buffer that grows by doubling. */
class HexBuffer {
  #bytes = new Uint8Array(1024);
  #nibbles = 0;

  get length(): number {
    return this.#nibbles;
  }

  push(nibble: number): void {
    const index = this.#nibbles >> 1;
    if (index >= this.#bytes.length) {
      const grown = new Uint8Array(this.#bytes.length * 2);
      grown.set(this.#bytes);
      this.#bytes = grown;
    }
    if ((this.#nibbles & 1) === 0) this.#bytes[index] = nibble << 4;
    else this.#bytes[index] = (this.#bytes[index] ?? 0) | nibble;
    this.#nibbles += 1;
  }

  /** The whole bytes read; an odd last digit is left out, as Word leaves it. */
  bytes(): Uint8Array {
    return this.#bytes.subarray(0, this.#nibbles >> 1);
  }
}

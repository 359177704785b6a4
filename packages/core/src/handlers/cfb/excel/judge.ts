/**
 * What an Excel 97-2003 workbook's records may hold, as the rebuild and verify judge them:
 * the record allowlist and the rules for names, links, objects and hyperlinks.
 */
import { isSafeHyperlink } from '../../office/hyperlinks.ts';
import { u16le, u32le } from '../../../_internal/bytes.ts';
import { AUTO_RUN_NAME } from '../../office/formulas.ts';
import { refusedBiffFormula } from './formulas.ts';
import { latin1OrUtf16, RT } from './records.ts';

/**
 * Records ([MS-XLS] 2.3) copied as they are: formatting, cells, sheet layout, drawings, charts,
 * protection and calculation settings. Any other record is left out, or the workbook refused
 * when it is one of {@link REFUSED_RECORDS}; records the rebuild judges one by one (NAME,
 * SUPBOOK, FORMULA, OBJ, HLINK, …) are handled before this list is asked.
 */
const KEPT_RECORDS: ReadonlySet<number> = new Set([
  // Workbook globals
  0x00e1,
  0x00c1,
  0x00e2,
  0x0042,
  0x0161,
  0x01c0,
  0x013d,
  0x009c,
  0x0012,
  0x0019,
  0x0013,
  0x01af,
  0x01bc,
  0x003d,
  0x0040,
  0x008d,
  0x0022,
  0x000e,
  0x01b7,
  0x00da,
  0x0031,
  0x041e,
  0x00e0,
  0x087c,
  0x087d,
  0x0892,
  0x0293,
  0x0092,
  0x088e,
  0x088f,
  0x0890,
  0x0863,
  0x008c,
  0x01c1,
  0x0896,
  0x089a,
  0x089b,
  0x088c,
  0x08a3,
  0x0017,
  0x00eb,
  0x0160,
  0x0867,
  0x088d,
  RT.SST,
  RT.EXTSST,
  RT.EXTERNNAME,
  // Sheets: calculation, printing, layout and view settings
  0x000d,
  0x000c,
  0x000f,
  0x0011,
  0x0010,
  0x005f,
  0x002a,
  0x002b,
  0x0082,
  0x0080,
  0x0225,
  0x0081,
  0x001b,
  0x001a,
  0x0014,
  0x0015,
  0x0083,
  0x0084,
  0x0026,
  0x0027,
  0x0028,
  0x0029,
  0x00a1,
  0x0033,
  0x0055,
  0x0099,
  0x007d,
  0x0200,
  0x023e,
  0x00a0,
  0x0041,
  0x001d,
  0x088b,
  0x089c,
  0x0862,
  0x0063,
  0x00dd,
  0x00ae,
  0x00af,
  0x00e9,
  // Cells and formulas
  0x0208,
  RT.STRING,
  RT.NUMBER,
  0x027e,
  0x00bd,
  0x00be,
  RT.BLANK,
  RT.BOOLERR,
  0x00fd,
  RT.LABEL,
  0x00d6,
  0x0236,
  // Tables, filters, conditional formats, validation, merged cells
  0x0868,
  0x0871,
  0x0872,
  0x0878,
  0x0875,
  0x087f,
  0x0812,
  0x0090,
  0x009d,
  0x009e,
  0x009b,
  0x087e,
  0x00e5,
  0x01b0,
  0x01b1,
  0x087a,
  0x087b,
  0x0879,
  0x01b2,
  0x01be,
  // Drawings, text boxes, comments
  0x00ec,
  0x00ed,
  0x01b6,
  0x001c,
  RT.HLINKTOOLTIP,
  // Chart future records (0x0850-0x085A, 0x0866, 0x089D-0x089E, 0x08A4-0x08A7)
  0x0850,
  0x0851,
  0x0852,
  0x0853,
  0x0854,
  0x0855,
  0x0856,
  0x0857,
  0x0859,
  0x085a,
  0x0866,
  0x089d,
  0x089e,
  0x08a4,
  0x08a5,
  0x08a6,
  0x08a7,
]);

/** [MS-XLS] 2.3: chart substream records are 0x1001-0x10FF (BRAI is judged on its own). */
const CHART_RECORDS_FIRST = 0x1001;
const CHART_RECORDS_LAST = 0x10ff;

/** Records whose presence refuses the workbook: what they do cannot be removed safely yet. */
export const REFUSED_RECORDS: ReadonlyMap<number, string> = new Map([
  [0x01ad, 'a query table (QSI) that fetches external data'],
  [0x0803, 'an external data query (DBQUERYEXT)'],
  [0x0805, 'a text file query (TXTQRY)'],
  [0x080a, 'an OLE DB connection (OLEDBCONN)'],
  [0x0876, 'a data connection (DCONN)'],
  [0x00dc, 'a parameterised query (DBORPARAMQRY)'],
  [0x0813, 'a real-time data server link (REALTIMEDATA)'],
  [0x00b0, 'a PivotTable (SXVIEW)'],
  [0x00d5, 'a PivotTable cache (SXSTREAMID)'],
  [0x0858, 'a PivotChart link (SXVIEWLINK)'],
]);

/**
 * 1 for each record type ({@link KEPT_RECORDS} and chart records) copied as it is: a sheet holds
 * a million records, each looked up in rebuild and again in verify.
 */
const KEPT_TYPES = new Uint8Array(0x10000);
for (const type of KEPT_RECORDS) KEPT_TYPES[type] = 1;
for (let type = CHART_RECORDS_FIRST; type <= CHART_RECORDS_LAST; type += 1) {
  if (type !== RT.BRAI) KEPT_TYPES[type] = 1;
}

/** Whether `type` (a record's 16-bit type) is copied as it is. */
export function isKeptRecord(type: number): boolean {
  return KEPT_TYPES[type] === 1;
}

/** [MS-XLS] 2.4.28 BOUNDSHEET8 `dt`: the kinds of sheet. */
export const SHEET_KIND = { worksheet: 0, macro: 1, chart: 2, vbModule: 6 } as const;

/** [MS-XLS] 2.5.114 built-in names Excel runs: Auto_Open, Auto_Close, Auto_Activate, Auto_Deactivate. */
const AUTO_RUN_BUILTINS: ReadonlySet<number> = new Set([0x01, 0x02, 0x0a, 0x0b]);
/** [MS-XLS] 2.4.150 Lbl flags: fFunc, fOB (a VBA object), fProc, fBuiltin. */
const NAME_FUNC = 0x0002;
const NAME_VBA_OBJECT = 0x0004;
const NAME_PROC = 0x0008;
const NAME_BUILTIN = 0x0020;
/** Lbl: grbit, chKey, cch, cce, reserved, itab, 4 reserved bytes, then the name. */
const NAME_FIXED_BYTES = 14;

/**
 * Why a NAME record ([MS-XLS] 2.4.150 Lbl) may not stay, or `undefined`: a name Excel runs on open,
 * close or activation (built-in 0x01/0x02/0x0A/0x0B, or `Auto_Open…` spelled out), a macro
 * function or command name, or a formula the screening refuses. `null` when the record does not
 * hold together.
 */
export function nameRefusal(
  data: Uint8Array,
  externalXtis?: ReadonlySet<number>,
): string | null | undefined {
  if (data.length < NAME_FIXED_BYTES + 1) return null;
  const flags = u16le(data, 0);
  const characters = data[3] ?? 0;
  const cce = u16le(data, 4);
  const wide = ((data[NAME_FIXED_BYTES] ?? 0) & 0x01) !== 0;
  const nameEnd = NAME_FIXED_BYTES + 1 + characters * (wide ? 2 : 1);
  if (nameEnd + cce > data.length) return null;
  const name = latin1OrUtf16(data.subarray(NAME_FIXED_BYTES + 1, nameEnd), wide);
  if ((flags & NAME_BUILTIN) !== 0 && AUTO_RUN_BUILTINS.has(name.charCodeAt(0))) {
    return 'a built-in name Excel runs on open, close or activation ([MS-XLS] Lbl fBuiltin Auto_Open/Auto_Close)';
  }
  if ((flags & NAME_BUILTIN) === 0 && AUTO_RUN_NAME.test(name)) {
    return `the name "${name}", which Excel runs as a macro on open, close or activation`;
  }
  if ((flags & (NAME_FUNC | NAME_PROC | NAME_VBA_OBJECT)) !== 0) {
    return `the macro name "${name}" ([MS-XLS] Lbl fFunc/fProc)`;
  }
  const refused = refusedBiffFormula(data.subarray(nameEnd, nameEnd + cce), externalXtis);
  return refused === undefined
    ? undefined
    : `the name "${name}", whose formula calls code, fetches or links outside the workbook`;
}

/** [MS-XLS] 2.4.271 SUPBOOK `cch`: this workbook's own sheets, and add-in functions. */
const SUPBOOK_SELF = 0x0401;
const SUPBOOK_ADD_IN = 0x3a01;
/** [MS-XLS] 2.5.277 VirtualPath: a DDE or OLE link is `application\x03topic`. */
const DDE_SEPARATOR = '\u0003';

/**
 * What a SUPBOOK record links to: this workbook's sheets, add-in functions (whose calls the
 * formula screening judges), or outside the workbook — another workbook, a DDE server or an OLE
 * object ([MS-XLS] 2.5.277 VirtualPath), told apart by the `\x03` DDE and OLE paths hold.
 */
export function supbookKind(data: Uint8Array): 'self' | 'add-in' | 'workbook' | 'dde' {
  const cch = u16le(data, 2);
  if (cch === SUPBOOK_SELF) return 'self';
  if (cch === SUPBOOK_ADD_IN) return 'add-in';
  const wide = ((data[4] ?? 0) & 0x01) !== 0;
  const path = latin1OrUtf16(data.subarray(5, 5 + cch * (wide ? 2 : 1)), wide);
  // A workbook's path starts with a volume or relative-path code (0x01-0x08) or names a workbook;
  // `app\x03topic` is DDE or OLE (`cmd\x03/c calc`, `Excel.Sheet.8\x03…`).
  const dde =
    path.includes(DDE_SEPARATOR) &&
    path.charCodeAt(0) >= 0x20 &&
    !/\.xl[a-z]{0,2}$/i.test(path.slice(path.lastIndexOf(DDE_SEPARATOR) + 1));
  return dde ? 'dde' : 'workbook';
}

/** Why a SUPBOOK may not be released: anything but this workbook's sheets and add-in functions. */
export function supbookRefusal(data: Uint8Array): string | undefined {
  const kind = supbookKind(data);
  return kind === 'self' || kind === 'add-in'
    ? undefined
    : 'a link to another workbook, a DDE server or an OLE object ([MS-XLS] SUPBOOK)';
}

/**
 * SUPBOOK of add-in functions ([MS-XLS] 2.4.271: ctab 1, cch 0x3A01): what a link outside the
 * workbook is replaced by, so that the SUPBOOKs after it keep their positions.
 */
export const ADD_IN_SUPBOOK: Uint8Array = Uint8Array.of(0x01, 0x00, 0x01, 0x3a);

/**
 * EXTERNNAME ([MS-XLS] 2.4.106) of an add-in function ([MS-XLS] AddinUdf: 4 reserved bytes, the
 * name, 2 unused bytes) named `_disarmed_N`: what a name of a removed link becomes, so the names
 * after it keep their positions.
 */
export function disarmedExternName(position: number): Uint8Array {
  const name = Buffer.from(`_disarmed_${position}`, 'latin1');
  const out = new Uint8Array(2 + 4 + 2 + name.length + 2);
  out[6] = name.length;
  out.set(name, 8);
  return out;
}

/** [MS-XLS] 2.4.181 OBJ subrecords: ftEnd, ftMacro, ftPioGrbit, ftPictFmla, ftLbsData. */
const FT_END = 0x0000;
const FT_MACRO = 0x0004;
const FT_PIO_GRBIT = 0x0008;
const FT_PICT_FMLA = 0x0009;
const FT_LBS_DATA = 0x0013;
/** Subrecords read from one OBJ before it is refused as malformed. */
const MAX_OBJ_SUBRECORDS = 64;
/**
 * [MS-XLS] FtPioGrbit flags that make a picture an OLE object: fDde (a DDE link), fCtl (an
 * ActiveX control), fPrstm (the control's data is in the `Ctls` stream), fAutoload (a control
 * loaded on open).
 */
const PIO_DDE = 0x0002;
const PIO_CONTROL = 0x0010;
const PIO_STORAGE = 0x0020;
const PIO_AUTOLOAD = 0x0200;
const PIO_OLE_FLAGS = PIO_DDE | PIO_CONTROL | PIO_STORAGE | PIO_AUTOLOAD;
/** [MS-XLS] 2.5.140 ObjFmla: cbFmla (2), then the formula's cce (2), 4 unused bytes, its rgce. */
const PICT_FMLA_FIRST_PTG_AT = 4 + 2 + 2 + 4;
/** PtgNameX in any class ([MS-XLS] 2.5.198.73): the formula of a linked object names its link. */
const PTG_NAME_X: ReadonlySet<number> = new Set([0x39, 0x59, 0x79]);

/**
 * Why an OBJ record ([MS-XLS] 2.4.181) may not be released, or `undefined`: a macro assigned to
 * the object (ftMacro), or an embedded or linked OLE object or ActiveX control (ftPictFmla, or
 * the FtPioGrbit flags of one). `null` when its subrecords do not hold together.
 */
export function objectRefusal(data: Uint8Array): string | null | undefined {
  let at = 0;
  for (let count = 0; count < MAX_OBJ_SUBRECORDS; count += 1) {
    if (at + 4 > data.length) return at === data.length ? undefined : null;
    const ft = u16le(data, at);
    const cb = u16le(data, at + 2);
    if (ft === FT_END) return undefined;
    if (ft === FT_MACRO)
      return 'a drawing object or form control that runs a macro ([MS-XLS] FtMacro)';
    if (ft === FT_PICT_FMLA)
      return 'an embedded or linked OLE object or ActiveX control ([MS-XLS] FtPictFmla)';
    if (ft === FT_PIO_GRBIT && cb >= 2 && (u16le(data, at + 4) & PIO_OLE_FLAGS) !== 0)
      return 'a picture flagged as an OLE object or ActiveX control ([MS-XLS] FtPioGrbit)';
    // [MS-XLS] 2.5.147 FtLbsData's cb does not give its size; it is the last subrecord but ftEnd.
    if (ft === FT_LBS_DATA) return undefined;
    at += 4 + cb;
  }
  return null;
}

/** What {@link objectWithoutActiveParts} took off an object. */
export interface ObjectRemovals {
  /** The macro a click on the object or control ran (ftMacro). */
  readonly macro: boolean;
  /**
   * The OLE object behind a picture (ftPictFmla): `embedded` in an `MBD…` storage, `linked`
   * to a file or DDE server, `control` an ActiveX control in `Ctls`.
   */
  readonly ole: 'embedded' | 'linked' | 'control' | undefined;
}

/**
 * An OBJ record without what makes it run or load anything: its ftMacro subrecord (a click does
 * nothing; the object stays) and, for an OLE object or ActiveX control, its ftPictFmla and the
 * FtPioGrbit flags that go with it. Excel draws an OLE object from the picture its OfficeArt
 * shape references in the drawing group, so what stays is that picture, shown where the object
 * was. `null` when the subrecords do not hold together.
 */
export function objectWithoutActiveParts(
  data: Uint8Array,
): { readonly data: Uint8Array; readonly removed: ObjectRemovals } | null {
  const kept: Uint8Array[] = [];
  let macro = false;
  let pictFmla: Uint8Array | undefined;
  let pioFlags = 0;
  let at = 0;
  for (let count = 0; count < MAX_OBJ_SUBRECORDS; count += 1) {
    if (at + 4 > data.length) {
      if (at !== data.length) return null;
      break;
    }
    const ft = u16le(data, at);
    const end = at + 4 + u16le(data, at + 2);
    if (ft === FT_END || ft === FT_LBS_DATA) {
      kept.push(data.subarray(at));
      at = data.length;
      break;
    }
    if (end > data.length) return null;
    if (ft === FT_MACRO) {
      macro = true;
    } else if (ft === FT_PICT_FMLA) {
      pictFmla = data.subarray(at, end);
    } else if (ft === FT_PIO_GRBIT && end - at >= 6) {
      pioFlags = u16le(data, at + 4);
      const flags = Uint8Array.from(data.subarray(at, end));
      new DataView(flags.buffer).setUint16(4, pioFlags & ~PIO_OLE_FLAGS, true);
      kept.push(flags);
    } else {
      kept.push(data.subarray(at, end));
    }
    at = end;
  }
  if (at !== data.length) return null;
  const isOle = pictFmla !== undefined || (pioFlags & PIO_OLE_FLAGS) !== 0;
  const ole = !isOle
    ? undefined
    : (pioFlags & PIO_CONTROL) !== 0
      ? 'control'
      : (pioFlags & PIO_DDE) !== 0 || PTG_NAME_X.has(pictFmla?.[PICT_FMLA_FIRST_PTG_AT] ?? 0)
        ? 'linked'
        : 'embedded';
  const changed = macro || isOle;
  return { data: changed ? Buffer.concat(kept) : data, removed: { macro, ole } };
}

/** [MS-OSHARED] 2.3.7.1 Hyperlink Object flags. */
const HAS_MONIKER = 0x0001;
const HAS_DISPLAY_NAME = 0x0010;
const HAS_FRAME_NAME = 0x0080;
const MONIKER_SAVED_AS_STRING = 0x0100;
/** [MS-OSHARED] 2.3.7.6 URLMoniker's CLSID {79EAC9E0-BAF9-11CE-8C82-00AA004BA90B}, as stored. */
const URL_MONIKER_CLSID = [
  0xe0, 0xc9, 0xea, 0x79, 0xf9, 0xba, 0xce, 0x11, 0x8c, 0x82, 0x00, 0xaa, 0x00, 0x4b, 0xa9, 0x0b,
] as const;
/** HLINK: a Ref8U (8 bytes) and the hyperlink CLSID (16) before the Hyperlink Object. */
const HLINK_OBJECT_AT = 24;

/**
 * Whether an HLINK record ([MS-XLS] 2.4.140) may stay: a link to a place in the workbook (no
 * moniker), or a URL moniker to http, https or mailto. A file moniker, a UNC path or anything the
 * reader cannot follow goes, as hyperlink relationships to such targets go from `.xlsx`.
 */
export function isKeptHyperlink(data: Uint8Array): boolean {
  let at = HLINK_OBJECT_AT + 4;
  if (at + 4 > data.length) return false;
  const flags = u32le(data, at);
  at += 4;
  const skipString = (): boolean => {
    if (at + 4 > data.length) return false;
    const units = u32le(data, at);
    at += 4 + units * 2;
    return at <= data.length;
  };
  if ((flags & HAS_DISPLAY_NAME) !== 0 && !skipString()) return false;
  if ((flags & HAS_FRAME_NAME) !== 0 && !skipString()) return false;
  if ((flags & HAS_MONIKER) === 0) return true;
  if ((flags & MONIKER_SAVED_AS_STRING) !== 0) {
    if (at + 4 > data.length) return false;
    const units = u32le(data, at);
    if (at + 4 + units * 2 > data.length) return false;
    return isSafeHyperlink(utf16z(data.subarray(at + 4, at + 4 + units * 2)));
  }
  if (at + 20 > data.length) return false;
  if (!URL_MONIKER_CLSID.every((byte, index) => data[at + index] === byte)) return false;
  const bytes = u32le(data, at + 16);
  if (at + 20 + bytes > data.length) return false;
  return isSafeHyperlink(utf16z(data.subarray(at + 20, at + 20 + bytes)));
}

/** UTF-16LE text up to its first NUL. */
function utf16z(bytes: Uint8Array): string {
  const text = Buffer.from(bytes.subarray(0, bytes.length - (bytes.length % 2))).toString(
    'utf16le',
  );
  const end = text.indexOf('\0');
  return end === -1 ? text : text.slice(0, end);
}

/** [MS-XLS] 2.4.29 BRAI: id, rt, flags, ifmt, then a ChartParsedFormula (cce, rgce). */
const BRAI_FORMULA_AT = 6;

/** Why a chart's BRAI record (a series' data reference) may not stay, or `undefined`. */
export function braiRefusal(
  data: Uint8Array,
  externalXtis?: ReadonlySet<number>,
): string | undefined {
  const cce = u16le(data, BRAI_FORMULA_AT);
  const end = BRAI_FORMULA_AT + 2 + cce;
  if (
    end > data.length ||
    refusedBiffFormula(data.subarray(BRAI_FORMULA_AT + 2, end), externalXtis) !== undefined
  ) {
    return 'a chart series whose data formula calls code or links outside the workbook ([MS-XLS] BRAI)';
  }
  return undefined;
}

/** A NAME record's `itab`: the 1-based position of the sheet it is local to, 0 for the workbook. */
export function nameItab(data: Uint8Array): number {
  return u16le(data, 8);
}

/** A NAME record with `itab` set to `itab` (1-based sheet position; 0 for the workbook). */
export function withNameItab(data: Uint8Array, itab: number): Uint8Array {
  const out = Uint8Array.from(data);
  new DataView(out.buffer).setUint16(8, itab, true);
  return out;
}

/** `#REF!`: PtgErr with the error code 0x17 ([MS-XLS] PtgErr, BErr). */
const REF_ERROR_FORMULA = [0x1c, 0x17];

/**
 * A NAME record disarmed in place, as `.xlsb` names are: formulas find names by position, so the
 * record stays, hidden, renamed `_disarmed_N` (`N` its 1-based position), without the built-in,
 * function, procedure and VBA object flags, with the formula `=#REF!`.
 */
export function disarmedName(position: number, itab: number): Uint8Array {
  const name = Buffer.from(`_disarmed_${position}`, 'latin1');
  const out = new Uint8Array(NAME_FIXED_BYTES + 1 + name.length + REF_ERROR_FORMULA.length);
  const view = new DataView(out.buffer);
  view.setUint16(0, 0x0001, true); // fHidden
  out[3] = name.length;
  view.setUint16(4, REF_ERROR_FORMULA.length, true);
  view.setUint16(8, itab, true);
  out.set(name, NAME_FIXED_BYTES + 1);
  out.set(REF_ERROR_FORMULA, NAME_FIXED_BYTES + 1 + name.length);
  return out;
}

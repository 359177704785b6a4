import { isSafeHyperlink } from '../../office/hyperlinks.ts';
import { u32le } from '../../../_internal/bytes.ts';
import type { FindingKind } from '../../../findings.ts';
import { childrenOf, cStringOf, RT } from './records.ts';
import type { PptRecord } from './records.ts';

/**
 * [MS-PPT] 2.13.14 InteractiveInfoAtom `action` values that run something, and the finding each
 * counts as (as OOXML counts `ppaction://macro`, `program`, `ole`). Jumps, hyperlinks (screened
 * by target), media and custom shows stay.
 */
const RUNNING_ACTIONS: ReadonlyMap<number, { what: string; kind: FindingKind }> = new Map([
  [1, { what: 'a macro', kind: 'vba-macro' }],
  [2, { what: 'a program', kind: 'vba-macro' }],
  [5, { what: 'an OLE object verb', kind: 'embedded-object' }],
]);
/** [MS-PPT] 2.13.14: `action` is the ninth byte of the atom. */
const ACTION_OFFSET = 8;
/** [MS-PPT] 2.4.13 ExHyperlinkContainer: the CString with recInstance 1 is the target. */
const HYPERLINK_TARGET_INSTANCE = 1;

/** A record the rebuild removes, whole, and what it is. */
export interface Removal {
  readonly kind: FindingKind;
  /** In words, for a verify failure's message. */
  readonly what: string;
}

/**
 * Whether `record` runs, embeds or fetches something, and is then removed whole: a VBA project
 * announced by a VBAInfoContainer ([MS-PPT] 2.4.10, 2.4.11), an embedded or linked OLE object or
 * an ActiveX control (2.10.x ExOleEmbedContainer, ExOleLinkContainer, ExControlContainer), an
 * action that runs a macro, a program or an OLE verb (2.10.x InteractiveInfoContainer), a
 * hyperlink to anything but http, https or mailto (the rule OOXML and ODF follow), and movies
 * and sounds linked to a file path (2.10.x ExAviMovieContainer, ExMCIMovieContainer,
 * ExWAVAudioLinkContainer). Their atoms answer too, for a reader that meets them on their own.
 */
export function removalOf(bytes: Uint8Array, record: PptRecord): Removal | undefined {
  switch (record.recType) {
    case RT.vbaInfo:
      return childrenOf(bytes, record).some((child) => isVbaProject(bytes, child))
        ? VBA_PROJECT
        : undefined;
    case RT.vbaInfoAtom:
      return isVbaProject(bytes, record) ? VBA_PROJECT : undefined;
    case RT.exEmbed:
      return { kind: 'embedded-object', what: 'an embedded OLE object (ExOleEmbedContainer)' };
    case RT.exLink:
      return { kind: 'external-relationship', what: 'a linked OLE object (ExOleLinkContainer)' };
    case RT.exControl:
      return { kind: 'activex-control', what: 'an ActiveX control (ExControlContainer)' };
    case RT.exAviMovie:
    case RT.exMciMovie:
    case RT.exWavAudioLink:
      return { kind: 'external-relationship', what: 'a movie or sound linked to a file' };
    case RT.interactiveInfo:
      return childrenOf(bytes, record)
        .map((child) => runningActionOf(bytes, child))
        .find((removal) => removal !== undefined);
    case RT.interactiveInfoAtom:
      return runningActionOf(bytes, record);
    case RT.exHyperlink: {
      const target = childrenOf(bytes, record).find(
        (child) => child.recType === RT.cString && child.recInstance === HYPERLINK_TARGET_INSTANCE,
      );
      const url = target ? cStringOf(bytes, target) : '';
      return url !== '' && !isSafeHyperlink(url)
        ? {
            kind: 'external-relationship',
            what: 'a hyperlink to a target other than http, https or mailto (ExHyperlinkContainer)',
          }
        : undefined;
    }
    default:
      return undefined;
  }
}

const VBA_PROJECT: Removal = { kind: 'vba-macro', what: 'a VBA project (VBAInfoContainer)' };

/** [MS-PPT] 2.4.11 VBAInfoAtom: `persistIdRef` and `fHasMacros` are zero when there is none. */
function isVbaProject(bytes: Uint8Array, record: PptRecord): boolean {
  return (
    record.recType === RT.vbaInfoAtom &&
    record.end - record.body >= 8 &&
    (u32le(bytes, record.body) !== 0 || u32le(bytes, record.body + 4) !== 0)
  );
}

function runningActionOf(bytes: Uint8Array, record: PptRecord): Removal | undefined {
  if (record.recType !== RT.interactiveInfoAtom || record.end - record.body <= ACTION_OFFSET) {
    return undefined;
  }
  const action = RUNNING_ACTIONS.get(bytes[record.body + ACTION_OFFSET] ?? 0);
  return action && { kind: action.kind, what: `an action that runs ${action.what}` };
}

import { isSafeHyperlink } from '../../../_internal/package-zip.ts';
import { u32le } from '../../../_internal/bytes.ts';
import { childrenOf, cStringOf, RT } from './records.ts';
import type { PptRecord } from './records.ts';

/**
 * [MS-PPT] 2.13.14 InteractiveInfoAtom `action` values that run something: a macro, a program,
 * an OLE verb. Jumps, hyperlinks (screened by target), media and custom shows stay.
 */
const RUNNING_ACTIONS: ReadonlyMap<number, string> = new Map([
  [1, 'a macro'],
  [2, 'a program'],
  [5, 'an OLE object verb'],
]);
/** [MS-PPT] 2.4.13 ExHyperlinkContainer: the CString with recInstance 1 is the target. */
const HYPERLINK_TARGET_INSTANCE = 1;

/**
 * What active construct `record` is, in words for a rejection's detail, or `undefined` for a
 * record that runs, embeds or fetches nothing: a VBA project announced by its VBAInfoAtom
 * ([MS-PPT] 2.4.10), an embedded OLE object, OLE link or ActiveX control (2.10.x ExEmbed, ExLink,
 * ExControl), an action that runs a macro, a program or an OLE verb (2.13.14), a hyperlink to
 * anything but http, https or mailto (the rule OOXML and ODF follow), and movies and sounds
 * linked to a file path (2.10.x ExAviMovie, ExMCIMovie, ExWAVAudioLink).
 */
export function activeConstructOf(bytes: Uint8Array, record: PptRecord): string | undefined {
  switch (record.recType) {
    case RT.vbaInfoAtom:
      // persistIdRef, fHasMacros: both zero when PowerPoint or LibreOffice write no project.
      return record.end - record.body >= 8 &&
        (u32le(bytes, record.body) !== 0 || u32le(bytes, record.body + 4) !== 0)
        ? 'a VBA project (VBAInfoAtom)'
        : undefined;
    case RT.exEmbed:
      return 'an embedded OLE object (ExOleEmbedContainer)';
    case RT.exLink:
      return 'a linked OLE object (ExOleLinkContainer)';
    case RT.exControl:
      return 'an ActiveX control (ExControlContainer)';
    case RT.exAviMovie:
    case RT.exMciMovie:
    case RT.exWavAudioLink:
      return 'a movie or sound linked to a file';
    case RT.interactiveInfoAtom: {
      const action = record.end - record.body >= 9 ? bytes[record.body + 8] : undefined;
      const runs = action === undefined ? undefined : RUNNING_ACTIONS.get(action);
      return runs === undefined ? undefined : `an action that runs ${runs} (InteractiveInfoAtom)`;
    }
    case RT.exHyperlink: {
      const target = childrenOf(bytes, record).find(
        (child) => child.recType === RT.cString && child.recInstance === HYPERLINK_TARGET_INSTANCE,
      );
      const url = target ? cStringOf(bytes, target) : '';
      return url !== '' && !isSafeHyperlink(url)
        ? 'a hyperlink to a target other than http, https or mailto (ExHyperlinkContainer)'
        : undefined;
    }
    default:
      return undefined;
  }
}

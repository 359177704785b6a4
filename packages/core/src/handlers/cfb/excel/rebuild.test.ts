import {
  biffRecord,
  buildCompoundFile,
  buildExcelWorkbook,
  buildWorkbookStream,
  ddeLink,
  EICAR_TEST_FILE,
  externalWorkbook,
  externSheet,
  formulaCell,
  FTAB,
  hyperlink,
  labelCell,
  macroButton,
  nameRecord,
  numberCell,
  oleObject,
  olefileListing,
  ptg,
  ref3d,
  selfSupbook,
} from '@disarm/fixtures';
import { describe, expect, it } from 'vitest';

import { disarm } from '../../../disarm.ts';

const PAYLOAD = 'Shell "calc.exe"';

async function rebuilt(bytes: Uint8Array) {
  const outcome = await disarm({ bytes, fileName: 'book.xls' });
  if (outcome.status !== 'cleaned') throw new Error(`${outcome.status}: ${outcome.detail}`);
  return outcome;
}

/** The records of a rebuilt file's `Workbook` stream, as python-olefile reads the stream. */
function recordsOf(bytes: Uint8Array): { type: number; data: Buffer; offset: number }[] {
  const listing = olefileListing(bytes);
  expect(listing.issues).toEqual([]);
  const stream = Buffer.from(listing.entries.find((e) => e.path === 'Workbook')?.hex ?? '', 'hex');
  const records = [];
  for (let at = 0; at + 4 <= stream.length; at += 4 + stream.readUInt16LE(at + 2)) {
    const size = stream.readUInt16LE(at + 2);
    records.push({
      type: stream.readUInt16LE(at),
      data: stream.subarray(at + 4, at + 4 + size),
      offset: at,
    });
  }
  return records;
}

describe('Excel 97-2003 rebuild', () => {
  it('rebuilds a clean workbook with its cells and nothing to report', async () => {
    const outcome = await rebuilt(buildExcelWorkbook());
    expect(outcome.findings).toEqual([]);
    expect(olefileListing(outcome.bytes).entries.map((entry) => entry.path)).toEqual(['Workbook']);
    const types = recordsOf(outcome.bytes).map((record) => record.type);
    expect(types.filter((type) => type === 0x0203)).toHaveLength(2);
    expect(types).toContain(0x0204);
  });

  it('leaves out the VBA project, object storages and summary information, and says so', async () => {
    const bytes = buildExcelWorkbook({
      vba: PAYLOAD,
      globals: [biffRecord(0x00d3), biffRecord(0x01ba, [4, 0, 0, 0x54, 0x68, 0x69, 0x73])],
      streams: {
        'MBD0001/\u0001Ole10Native': Buffer.from(PAYLOAD),
        '\u0005SummaryInformation': Buffer.alloc(48),
      },
    });
    expect(olefileListing(bytes).entries.map((entry) => entry.path)).toContain(
      '_VBA_PROJECT_CUR/VBA/dir',
    );
    const outcome = await rebuilt(bytes);
    expect(outcome.findings.map((finding) => finding.kind)).toEqual([
      'document-metadata',
      'embedded-object',
      'vba-macro',
    ]);
    expect(olefileListing(outcome.bytes).entries.map((entry) => entry.path)).toEqual(['Workbook']);
    const types = recordsOf(outcome.bytes).map((record) => record.type);
    expect(types).not.toContain(0x00d3);
    expect(types).not.toContain(0x01ba);
  });

  it('points every sheet at its BOF after the globals shrank', async () => {
    const bytes = buildExcelWorkbook({
      globals: [biffRecord(0x00d3), biffRecord(0x005c, Buffer.alloc(112, 0x20))],
      sheets: [
        { name: 'One', records: [numberCell(0, 0, 1)] },
        { name: 'Two', records: [numberCell(0, 0, 2)] },
      ],
    });
    const records = recordsOf((await rebuilt(bytes)).bytes);
    const sheets = records.filter((record) => record.type === 0x0085);
    expect(sheets).toHaveLength(2);
    for (const sheet of sheets) {
      const at = records.find((record) => record.offset === sheet.data.readUInt32LE(0));
      expect(at?.type).toBe(0x0809);
    }
  });

  it('copies a record with its CONTINUE records, and leaves out a record it drops with them', async () => {
    // A text box's TXO with its text and formatting runs in CONTINUE records ([MS-XLS] 2.4.329).
    const textBox = Buffer.concat([
      biffRecord(0x01b6, Buffer.alloc(18)),
      biffRecord(0x003c, Buffer.from('\0note', 'latin1')),
      biffRecord(0x003c, Buffer.alloc(16)),
    ]);
    const unknown = Buffer.concat([
      biffRecord(0x0999, [1, 2]),
      biffRecord(0x003c, Buffer.from(PAYLOAD)),
    ]);
    const bytes = buildExcelWorkbook({
      sheets: [
        {
          name: 'Sheet1',
          records: [numberCell(0, 0, 1), textBox, unknown, numberCell(1, 0, 2)],
        },
      ],
    });
    const outcome = await rebuilt(bytes);
    expect(outcome.findings).toEqual([{ kind: 'hidden-data', count: 1 }]);
    const stream = Buffer.from(
      olefileListing(outcome.bytes).entries.find((e) => e.path === 'Workbook')?.hex ?? '',
      'hex',
    );
    expect(
      stream.includes(Buffer.concat([numberCell(0, 0, 1), textBox, numberCell(1, 0, 2)])),
    ).toBe(true);
    expect(stream.includes(Buffer.from(PAYLOAD))).toBe(false);
  });

  it('flattens formulas that run code or fetch to their cached values, keeping the rest', async () => {
    const bytes = buildExcelWorkbook({
      sheets: [
        {
          name: 'Sheet1',
          records: [
            numberCell(0, 0, 1),
            formulaCell(
              1,
              0,
              Buffer.concat([ptg.str('kernel32'), ptg.str('WinExec'), ptg.funcVar(2, FTAB.CALL)]),
              42,
            ),
            formulaCell(2, 0, Buffer.concat([ptg.str(PAYLOAD), ptg.funcVar(1, FTAB.EXEC)]), 'ran'),
            formulaCell(
              3,
              0,
              Buffer.concat([
                ptg.nameX(0, 1),
                ptg.str('http://x.test/'),
                ptg.funcVar(2, FTAB.BY_NAME),
              ]),
              'fetched',
            ),
            formulaCell(
              4,
              0,
              Buffer.concat([ptg.str('file://evil/share'), ptg.funcVar(1, FTAB.HYPERLINK)]),
              'click',
            ),
            formulaCell(
              5,
              0,
              Buffer.concat([ptg.str('https://example.com/'), ptg.funcVar(1, FTAB.HYPERLINK)]),
              'ok',
            ),
            formulaCell(6, 0, Buffer.concat([ptg.ref(0, 0), ptg.int(2), ptg.add()]), 3),
          ],
        },
      ],
    });
    const outcome = await rebuilt(bytes);
    expect(outcome.findings).toMatchObject([
      { kind: 'external-relationship', count: 2 },
      { kind: 'xlm-macro', count: 2 },
    ]);
    const cells = recordsOf(outcome.bytes).filter((r) => [0x0006, 0x0203, 0x0204].includes(r.type));
    const byRow = new Map(cells.map((r) => [r.data.readUInt16LE(0), r]));
    expect(byRow.get(1)?.type).toBe(0x0203);
    expect(byRow.get(1)?.data.readDoubleLE(6)).toBe(42);
    expect(byRow.get(2)?.type).toBe(0x0204);
    expect(byRow.get(2)?.data.subarray(9).toString('latin1')).toBe('ran');
    expect(byRow.get(3)?.type).toBe(0x0204);
    expect(byRow.get(4)?.type).toBe(0x0204);
    expect(byRow.get(5)?.type).toBe(0x0006);
    expect(byRow.get(6)?.type).toBe(0x0006);
    expect(Buffer.from(outcome.bytes).includes(Buffer.from(PAYLOAD))).toBe(false);
  });

  it('removes hyperlinks to anything but http, https and mailto', async () => {
    const bytes = buildExcelWorkbook({
      sheets: [
        {
          name: 'Sheet1',
          records: [
            labelCell(0, 0, 'link'),
            hyperlink('file://attacker/share/x.exe'),
            hyperlink('https://example.com/'),
          ],
        },
      ],
    });
    const outcome = await rebuilt(bytes);
    expect(outcome.findings).toMatchObject([{ kind: 'external-relationship', count: 1 }]);
    const links = recordsOf(outcome.bytes).filter((record) => record.type === 0x01b8);
    expect(links).toHaveLength(1);
    expect(links[0]?.data.includes(Buffer.from('https://example.com/', 'utf16le'))).toBe(true);
  });

  it('removes a very hidden Excel 4.0 macro sheet and disarms its Auto_Open name, renumbering the sheets after it', async () => {
    const exec = Buffer.concat([ptg.str(PAYLOAD), ptg.funcVar(1, FTAB.EXEC)]);
    const bytes = buildExcelWorkbook({
      sheets: [
        { name: 'Sheet1', records: [formulaCell(0, 0, ref3d(1, 0, 0), 5)] },
        { name: 'Macro1', macro: true, visibility: 2, records: [formulaCell(0, 0, exec, 0)] },
        { name: 'Data', records: [numberCell(0, 0, 5)] },
      ],
      globals: [
        selfSupbook(3),
        externSheet([
          [0, 1, 1],
          [0, 2, 2],
        ]),
        nameRecord({ name: '\u0001', builtin: true, hidden: true, rgce: ref3d(0, 0, 0) }),
        nameRecord({ name: 'Total', rgce: ref3d(1, 0, 0) }),
      ],
    });
    const outcome = await rebuilt(bytes);
    expect(outcome.findings).toMatchObject([{ kind: 'xlm-macro', count: 2 }]);
    expect(Buffer.from(outcome.bytes).includes(Buffer.from(PAYLOAD))).toBe(false);
    const records = recordsOf(outcome.bytes);
    const sheets = records.filter((record) => record.type === 0x0085);
    expect(sheets.map((sheet) => sheet.data.subarray(8).toString('latin1'))).toEqual([
      'Sheet1',
      'Data',
    ]);
    for (const sheet of sheets) {
      expect(records.find((r) => r.offset === sheet.data.readUInt32LE(0))?.type).toBe(0x0809);
    }
    // The reference into the macro sheet is to a deleted sheet; the one into Data follows it.
    const xtis = records.find((record) => record.type === 0x0017)?.data;
    expect(xtis?.toString('hex')).toBe('02000000ffffffff000001000100');
    expect(records.find((record) => record.type === 0x01ae)?.data.readUInt16LE(0)).toBe(2);
    const names = records.filter((record) => record.type === 0x0018).map((r) => r.data);
    expect(names[0]?.readUInt16LE(0)).toBe(0x0001);
    expect(names[0]?.subarray(15).toString('latin1')).toBe('_disarmed_1\u001c\u0017');
    expect(names[1]?.subarray(15, 20).toString('latin1')).toBe('Total');
  });

  it.each([
    [
      'a built-in Auto_Open name',
      () =>
        buildExcelWorkbook({
          globals: [nameRecord({ name: '\u0001', builtin: true, rgce: ptg.ref(0, 0) })],
        }),
    ],
    [
      'an Auto_Open name spelled out',
      () =>
        buildExcelWorkbook({ globals: [nameRecord({ name: 'auto_open_x', rgce: ptg.ref(0, 0) })] }),
    ],
    [
      'a macro command name',
      () =>
        buildExcelWorkbook({
          globals: [nameRecord({ name: 'Run', macro: true, rgce: ptg.ref(0, 0) })],
        }),
    ],
  ])('disarms %s in place', async (_name, make) => {
    const outcome = await rebuilt(make());
    expect(outcome.findings).toMatchObject([{ kind: 'xlm-macro', count: 1 }]);
    const names = recordsOf(outcome.bytes).filter((record) => record.type === 0x0018);
    expect(names.map((name) => name.data.subarray(15).toString('latin1'))).toEqual([
      '_disarmed_1\u001c\u0017',
    ]);
  });

  it('removes DDE and workbook links, their names and the formulas through them', async () => {
    const bytes = buildExcelWorkbook({
      sheets: [
        {
          name: 'Sheet1',
          records: [
            numberCell(0, 0, 1),
            formulaCell(1, 0, ref3d(1, 0, 0), 12),
            formulaCell(2, 0, Buffer.concat([ptg.nameX(0, 1)]), 'dde'),
            formulaCell(3, 0, ref3d(2, 0, 0), 1),
          ],
        },
      ],
      globals: [
        ddeLink('cmd', '/c calc'),
        externalWorkbook('\u0001Cshare\u0003prices.xls', ['Data']),
        selfSupbook(1),
        externSheet([
          [0, 0xfffe, 0xfffe],
          [1, 0, 0],
          [2, 0, 0],
        ]),
      ],
    });
    const outcome = await rebuilt(bytes);
    expect(outcome.findings).toMatchObject([
      { kind: 'dde-link', count: 1 },
      { kind: 'external-relationship', count: 3 },
    ]);
    for (const text of ['cmd', '/c calc', 'prices']) {
      expect(Buffer.from(outcome.bytes).includes(Buffer.from(text)), text).toBe(false);
    }
    const records = recordsOf(outcome.bytes);
    const supbooks = records.filter((record) => record.type === 0x01ae);
    expect(supbooks.map((record) => record.data.toString('hex'))).toEqual([
      '0100013a',
      '0100013a',
      '01000104',
    ]);
    const byRow = new Map(
      records
        .filter((r) => [0x0006, 0x0203, 0x0204].includes(r.type))
        .map((r) => [r.data.readUInt16LE(0), r]),
    );
    expect(byRow.get(1)?.type).toBe(0x0203);
    expect(byRow.get(1)?.data.readDoubleLE(6)).toBe(12);
    expect(byRow.get(2)?.type).toBe(0x0204);
    expect(byRow.get(3)?.type).toBe(0x0006);
  });

  it('takes the macro off a button, keeping the button', async () => {
    const bytes = buildExcelWorkbook({
      sheets: [{ name: 'Sheet1', records: [macroButton(ptg.ref(0, 0))] }],
    });
    const outcome = await rebuilt(bytes);
    expect(outcome.findings).toMatchObject([{ kind: 'xlm-macro', count: 1 }]);
    const objects = recordsOf(outcome.bytes).filter((record) => record.type === 0x005d);
    expect(objects).toHaveLength(1);
    // ftCmo (22 bytes) then ftEnd: the ftMacro subrecord between them is gone.
    expect(objects[0]?.data.length).toBe(26);
    expect(objects[0]?.data.readUInt16LE(22)).toBe(0);
  });

  it.each([
    ['an embedded OLE object', 'embedded', 'MBD00000001/\u0001Ole10Native', 'embedded-object'],
    ['a linked OLE object', 'linked', undefined, 'external-relationship'],
    ['an ActiveX control', 'control', 'Ctls', 'activex-control'],
  ] as const)(
    'turns %s into the picture Excel shows for it',
    async (_name, kind, stream, finding) => {
      const bytes = buildExcelWorkbook({
        sheets: [{ name: 'Sheet1', records: [numberCell(0, 0, 1), oleObject(kind)] }],
        ...(stream === undefined ? {} : { streams: { [stream]: Buffer.from(PAYLOAD) } }),
      });
      const outcome = await rebuilt(bytes);
      expect(outcome.findings.map((entry) => entry.kind)).toContain(finding);
      expect(olefileListing(outcome.bytes).entries.map((entry) => entry.path)).toEqual([
        'Workbook',
      ]);
      const objects = recordsOf(outcome.bytes).filter((record) => record.type === 0x005d);
      expect(objects).toHaveLength(1);
      // ftCmo (22 bytes, still a picture), ftCf (6), ftPioGrbit (6) with only fAutoPict, ftEnd (4).
      const object = objects[0]?.data ?? Buffer.alloc(0);
      expect(object.length).toBe(38);
      expect(object.readUInt16LE(4)).toBe(0x08);
      expect([object.readUInt16LE(28), object.readUInt16LE(32)]).toEqual([0x0008, 0x0001]);
      expect(object.readUInt16LE(34)).toBe(0);
    },
  );

  it('scans an object storage before leaving it out: EICAR in it is a threat', async () => {
    const bytes = buildExcelWorkbook({ streams: { 'MBD00000001/CONTENTS': EICAR_TEST_FILE } });
    const outcome = await disarm({ bytes, fileName: 'book.xls' });
    expect(outcome).toMatchObject({
      status: 'rejected',
      reason: 'threat_detected',
      threatNames: ['EICAR-Test-File'],
    });
    expect(outcome.status === 'rejected' && outcome.detail).toMatch(/MBD00000001\/CONTENTS/);
  });

  it.each([
    [
      'an Excel 5.0/95 workbook',
      () => buildCompoundFile({ Book: buildWorkbookStream() }),
      /Excel 5\.0\/95 workbooks are not supported/,
    ],
    [
      'a record running past the stream',
      () => buildCompoundFile({ Workbook: buildWorkbookStream().subarray(0, 200) }),
      /truncated/,
    ],
    [
      'a sheet whose name runs past its BOUNDSHEET8 record',
      () => {
        const stream = buildWorkbookStream();
        const at = stream.indexOf(Buffer.from([0x85, 0x00]));
        stream[at + 4 + 6] = 7; // "Sheet1" is 6 characters
        return buildCompoundFile({ Workbook: stream });
      },
      /sheet name does not fit/,
    ],
    [
      'a sheet offset where no substream starts',
      () => {
        const stream = buildWorkbookStream();
        const at = stream.indexOf(Buffer.from([0x85, 0x00]));
        stream.writeUInt32LE(stream.readUInt32LE(at + 4) + 2, at + 4);
        return buildCompoundFile({ Workbook: stream });
      },
      /no substream starts/,
    ],
  ])('rejects %s as invalid_file', async (_name, make, detail) => {
    const outcome = await disarm({ bytes: make(), fileName: 'book.xls' });
    expect(outcome).toMatchObject({ status: 'rejected', reason: 'invalid_file' });
    expect(outcome.status === 'rejected' && outcome.detail).toMatch(detail);
  });

  it('gives the same bytes for the same workbook, and again for its own output', async () => {
    const bytes = buildExcelWorkbook({ vba: PAYLOAD });
    const first = await rebuilt(bytes);
    const second = await rebuilt(bytes);
    expect(Buffer.from(second.bytes).equals(Buffer.from(first.bytes))).toBe(true);
    const again = await disarm({ bytes: first.bytes, fileName: 'book.xls' });
    expect(again.status === 'cleaned' && again.findings).toEqual([]);
  });
});

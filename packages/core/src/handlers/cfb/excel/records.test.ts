import { biffRecord } from '@disarm/fixtures';
import { describe, expect, it } from 'vitest';

import { RecordCursor, RecordWriter, RT } from './records.ts';

const LABEL = 0x0204;
const TXO = 0x01b6;

describe('BIFF8 record stream', () => {
  const stream = Buffer.concat([
    biffRecord(LABEL, [1, 2, 3]),
    biffRecord(TXO, [4]),
    biffRecord(RT.CONTINUE, [5, 6]),
    biffRecord(RT.CONTINUE, [7]),
    biffRecord(RT.EOF),
  ]);

  it('walks records one by one, or each with the CONTINUE records after it', () => {
    const single: number[] = [];
    const one = new RecordCursor(stream);
    while (one.next()) single.push(one.type);
    expect(single).toEqual([LABEL, TXO, RT.CONTINUE, RT.CONTINUE, RT.EOF]);

    const groups: [number, number, number][] = [];
    const grouped = new RecordCursor(stream);
    while (grouped.nextGroup()) groups.push([grouped.type, grouped.offset, grouped.end]);
    expect(groups).toEqual([
      [LABEL, 0, 7],
      [TXO, 7, 23],
      [RT.EOF, 23, 27],
    ]);
  });

  it('joins a record with its CONTINUE records and reads no field past the record', () => {
    const records = new RecordCursor(stream);
    records.nextGroup();
    expect(records.u16(1)).toBe(0x0302);
    expect(records.u16(2)).toBe(0x0003);
    expect([...records.data(2, 10)]).toEqual([3]);
    records.nextGroup();
    expect(records.continued).toBe(true);
    expect([...records.joined()]).toEqual([4, 5, 6, 7]);
  });

  it('writes copied and new records past the size of the stream they come from', () => {
    const out = new RecordWriter(stream, 8);
    out.copy(0, 7);
    out.copy(7, 23);
    const dataAt = out.write(LABEL, Uint8Array.of(9, 9));
    out.copy(23, 27);
    expect(dataAt).toBe(27);
    expect(Buffer.from(out.finish())).toEqual(
      Buffer.concat([stream.subarray(0, 23), biffRecord(LABEL, [9, 9]), biffRecord(RT.EOF)]),
    );
  });
});

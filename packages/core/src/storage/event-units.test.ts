import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { compressUnit, DecodedUnit, encodeUnit, eventKey, type UnitEvent } from './event-units.js';

const events = (n: number): UnitEvent[] =>
  Array.from({ length: n }, (_, k) => ({
    id: `evt_${String(k).padStart(26, '0')}`,
    type: k % 40 === 0 ? 'rare.kind' : 'order.created',
    occurred_at: new Date(Date.UTC(2026, 0, 1) + k * 1000).toISOString(),
    payload: k % 9 === 0 ? null : { k, note: `event "${k}"\n\u2028`, nested: { ok: k % 2 === 0, list: [1, 'two', null] } },
    status: k % 7 === 0 ? 'dead_lettered' : 'delivered',
    attempts: 1,
    error: k % 7 === 0 ? { stage: 'destination', code: 'record_rejected', message: `no ${k}` } : null,
    dead_lettered_at: k % 7 === 0 ? '2026-01-01T00:00:00.000Z' : null,
  }));

describe('encodeUnit', () => {
  it('takes a payload text made already as it is: the same unit as serializing the payload', () => {
    const plain = events(300);
    const withText = plain.map((e) => ({ ...e, payload_json: e.payload === null ? undefined : JSON.stringify(e.payload) }));
    const some = plain.map((e, k) => (k % 3 === 0 ? e : withText[k]!));
    const a = encodeUnit(plain);
    const b = encodeUnit(withText);
    expect(b.blocks).toEqual(a.blocks);
    expect(b.inline).toEqual(a.inline);
    expect(encodeUnit(some).blocks).toEqual(a.blocks);
    const decoded = new DecodedUnit(compressUnit(b));
    for (let k = 0; k < plain.length; k++) expect(decoded.event(k)).toEqual(plain[k]);
  });

  it("keeps a rare type's copies to the record's fields", () => {
    const rows = events(200).map((e) => ({ ...e, workspace_id: 'ws', created_at: 'x', payload_json: e.payload === null ? undefined : JSON.stringify(e.payload) }));
    const unit = encodeUnit(rows);
    const copies = JSON.parse(unit.inline.get('rare.kind')!) as Array<[number, Record<string, unknown>]>;
    expect(copies.map(([k]) => k)).toEqual([0, 40, 80, 120, 160]);
    expect(Object.keys(copies[1]![1]).sort()).toEqual(['attempts', 'dead_lettered_at', 'error', 'id', 'occurred_at', 'payload', 'status', 'type']);
    expect(copies[1]![1]).toEqual(events(200)[40]);
  });
});

describe('DecodedUnit.indexOf', () => {
  it("decodes only the block whose range of ids holds the id, and every block of a unit written without ranges", () => {
    // Ids out of order within the unit, as a replay's or a merge's may be.
    const shuffled = events(500).map((e, k) => ({ ...e, id: `evt_${String((k * 7) % 500).padStart(26, '0')}` }));
    const unit = encodeUnit(shuffled);
    expect(unit.ranges).toHaveLength(4);
    for (const [b, [least, greatest]] of unit.ranges.entries()) {
      const ids = shuffled.slice(b * 128, (b + 1) * 128).map((e) => e.id).sort();
      expect([least, greatest]).toEqual([ids[0], ids.at(-1)]);
    }
    const packed = compressUnit(unit);
    const decoded = new DecodedUnit(packed);
    for (const k of [0, 129, 300, 499]) expect(decoded.indexOf(shuffled[k]!.id)).toBe(k);
    expect(decoded.indexOf('evt_99999999999999999999999999')).toBe(-1);
    expect(decoded.indexOf('evt_')).toBe(-1);
    // A block whose range does not hold the id is never inflated: with garbage in place of
    // every block but the third, an id of the third is still found, where a unit written before
    // ranges were kept looks through the blocks in order and meets the garbage.
    const ordered = encodeUnit(events(400));
    const spoiled = (body: Buffer) => {
      const headerLength = body.readUInt32LE(0);
      const lengths = (JSON.parse(body.toString('utf8', 4, 4 + headerLength)) as { b: number[] }).b;
      let at = 4 + headerLength;
      lengths.forEach((length, b) => {
        if (b !== 2) body.fill(0xff, at, at + length);
        at += length;
      });
      return body;
    };
    expect(new DecodedUnit(spoiled(compressUnit(ordered))).indexOf(events(400)[300]!.id)).toBe(300);
    const unranged = compressUnit({ blocks: ordered.blocks, count: ordered.count });
    expect(new DecodedUnit(unranged).indexOf(events(400)[399]!.id)).toBe(399);
    expect(() => new DecodedUnit(spoiled(Buffer.from(unranged))).indexOf(events(400)[300]!.id)).toThrow();
  });
});

describe('eventKey', () => {
  it('reads a ULID id by its first 11 characters, exactly as the pattern it was defined by decides, and anything else by its hash', () => {
    const ulid = /^evt_[0-7][0-9A-HJKMNP-TV-Z]{25}$/;
    const ids = ['evt_01KDVDNBYG6YHW1T2NSCXX8F2W', 'evt_71KDVDNBYG6YHW1T2NSCXX8F2W', 'evt_81KDVDNBYG6YHW1T2NSCXX8F2W', 'evt_01KDVDNBYG6YHW1T2NSCXX8F2I', 'evt_01kdvdnbyg6yhw1t2nscxx8f2w', 'evt_01KDVDNBYG6YHW1T2NSCXX8F2', 'evt_01KDVDNBYG6YHW1T2NSCXX8F2WW', 'ev_001KDVDNBYG6YHW1T2NSCXX8F2W', 'evt_01KDVDNBYG6YHW1T2NSCXX8F2\u00e9', 'evt_00000000000000000000000002', 'order-42'];
    for (const id of ids) {
      const key = eventKey(id);
      expect(Number.isSafeInteger(key)).toBe(true);
      if (ulid.test(id)) expect(key).toBe(Number.parseInt([...id.slice(4, 15)].map((c) => '0123456789ABCDEFGHJKMNPQRSTVWXYZ'.indexOf(c).toString(32)).join(''), 32));
      else expect(key).toBe(Number.parseInt(createHash('sha1').update(id).digest('hex').slice(0, 13), 16));
    }
    expect(ids.filter((id) => ulid.test(id))).toHaveLength(3);
  });
});

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

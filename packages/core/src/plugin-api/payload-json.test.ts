import { describe, expect, it } from 'vitest';
import { madePayloadJson, payloadJson } from './payload-json.js';
import type { DestinationEvent } from './types.js';

const event = (payload: DestinationEvent['payload']): DestinationEvent => ({ id: 'evt_1', type: 't', occurredAt: '2026-01-01T00:00:00.000Z', payload });

describe('payloadJson', () => {
  it("is JSON.stringify of the payload, made once, and known to the log only once it is made", () => {
    const e = event({ a: 1, s: 'x"\\\n', nested: { b: [1, null] } });
    expect(madePayloadJson(e)).toBeUndefined();
    const text = payloadJson(e);
    expect(text).toBe(JSON.stringify(e.payload));
    expect(payloadJson(e)).toBe(text);
    expect(madePayloadJson(e)).toBe(text);
    // Enumerable keys of the event are unchanged: a destination that serializes events whole sees no more.
    expect(Object.keys(e)).toEqual(['id', 'type', 'occurredAt', 'payload']);
    expect(JSON.stringify(e)).toBe('{"id":"evt_1","type":"t","occurredAt":"2026-01-01T00:00:00.000Z","payload":{"a":1,"s":"x\\"\\\\\\n","nested":{"b":[1,null]}}}');
  });

  it('makes new text for a new payload, also on an event copied from one that had text', () => {
    const e = event({ a: 1 });
    payloadJson(e);
    const moved = { ...e, payload: { a: 2 } };
    expect(madePayloadJson(moved)).toBeUndefined();
    expect(payloadJson(moved)).toBe('{"a":2}');
    e.payload = { a: 3 };
    expect(madePayloadJson(e)).toBeUndefined();
    expect(payloadJson(e)).toBe('{"a":3}');
  });
});

import type { KafkaMessage } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { toRecord } from './source.js';

const message = (timestamp: string): KafkaMessage => ({ key: null, value: Buffer.from('{"n":1}'), timestamp, offset: '7', attributes: 0, headers: {} }) as KafkaMessage;

describe('toRecord', () => {
  it('takes occurred_at from the message timestamp, and none from one a Date cannot hold', () => {
    expect(toRecord('t', 0, message('1767225600000'), () => 'x').occurredAt).toBe('2026-01-01T00:00:00.000Z');
    // Nanoseconds written as CreateTime: no occurred_at (the engine uses the read time), no error.
    expect(toRecord('t', 0, message('1767225600000000000'), () => 'x').occurredAt).toBeUndefined();
    expect(toRecord('t', 0, message('-1'), () => 'x').occurredAt).toBeUndefined();
  });
});

describe('toRecord: Ferry events and exact values', () => {
  const ferryEvent = (offset: string, id: string): KafkaMessage =>
    ({
      key: null,
      value: Buffer.from(JSON.stringify({ id, type: 'order.created', occurred_at: '2026-01-01T00:00:00.000Z', payload: { n: 1 } })),
      timestamp: '1767225600000',
      offset,
      attributes: 0,
      headers: { 'ferry-id': Buffer.from(id) },
    }) as KafkaMessage;

  it('positions a Ferry event by its ferry-id, so a message produced twice is one event', () => {
    const first = toRecord('t', 0, ferryEvent('7', 'evt_01KA0000000000000000000001'), () => 'x');
    const again = toRecord('t', 2, ferryEvent('913', 'evt_01KA0000000000000000000001'), () => 'x');
    expect(first.position).toBe('ferry-id/evt_01KA0000000000000000000001');
    expect(again).toEqual(first);
    expect(first).toMatchObject({ type: 'order.created', occurredAt: '2026-01-01T00:00:00.000Z', payload: { n: 1 } });
    // Without the header the topic position is the position.
    expect(toRecord('t', 0, message('1767225600000'), () => 'x').position).toBe('t/0/7');
  });

  it('keeps numbers a double cannot hold as exact strings', () => {
    const exact = { ...message('1767225600000'), value: Buffer.from('{"a":12345678901234567890,"c":1e400,"b":1.5}') } as KafkaMessage;
    expect(toRecord('t', 0, exact, () => 'x').payload).toEqual({ a: '12345678901234567890', c: '1e400', b: 1.5 });
  });
});


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

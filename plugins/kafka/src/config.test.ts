import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import { kafkaConfigSchema, validateKafkaConfig, type KafkaConfig } from './config.js';

const parse = (config: object) => Value.Default(kafkaConfigSchema, structuredClone(config)) as KafkaConfig;
const schemaErrors = (config: object) => [...Value.Errors(kafkaConfigSchema, parse(config))].map((e) => e.path);
const brokers = ['127.0.0.1:9092'];

describe('kafka config', () => {
  it('needs topics for a source and a topic for a destination, and refuses the other side\'s fields', () => {
    expect(validateKafkaConfig(parse({ brokers }), 'source').map((p) => p.pointer)).toEqual(['/topics']);
    expect(validateKafkaConfig(parse({ brokers }), 'destination').map((p) => p.pointer)).toEqual(['/topic']);
    expect(validateKafkaConfig(parse({ brokers, topic: 't', group_id: 'g', type_path: 'kind' }), 'destination').map((p) => [p.pointer, p.code])).toEqual([
      ['/group_id', 'not_applicable'],
      ['/type_path', 'not_applicable'],
    ]);
    expect(validateKafkaConfig(parse({ brokers, topics: ['a'], topic: 't' }), 'source').map((p) => p.pointer)).toEqual(['/topic']);
    expect(validateKafkaConfig(parse({ brokers, topics: ['a'], topic: 't' }), 'bidirectional')).toEqual([]);
  });

  it('checks brokers, topic names and the key by the schema', () => {
    expect(schemaErrors({ brokers: [] })).toContain('/brokers');
    expect(schemaErrors({ brokers: ['no-port'] })).toContain('/brokers/0');
    expect(schemaErrors({ brokers: ['[::1]:9092', 'kafka-1.internal:9093'] })).toEqual([]);
    expect(schemaErrors({ brokers, topic: 'bad topic' })).toContain('/topic');
    expect(schemaErrors({ brokers, topic: 't', key: 'payload.customer.id' })).toEqual([]);
    expect(schemaErrors({ brokers, topic: 't', key: 'customer.id' })).toContain('/key');
    expect(schemaErrors({ brokers, topic: 't', key: 'payload.__proto__.x' })).toContain('/key');
    expect(schemaErrors({ brokers, topic: 't', acks: 2 })).toContain('/acks');
  });

  it('defaults as the README says', () => {
    const config = parse({ brokers, topic: 't' });
    expect([config.client_id, config.key, config.acks, config.compression, config.from_beginning, config.ssl]).toEqual(['ferry', 'event_id', -1, 'none', false, false]);
  });

  it('wants a client certificate and its key together', () => {
    expect(validateKafkaConfig(parse({ brokers, topic: 't', ssl: { cert: 'PEM' } }), 'destination').map((p) => p.pointer)).toEqual(['/ssl/key']);
  });
});

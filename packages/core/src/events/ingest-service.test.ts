import { Type } from '@sinclair/typebox';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { generateWebhookSecret, webhookHeaders } from '../crypto/index.js';
import { createEngine, engineContext, type Engine } from '../engine/index.js';
import { isFerryError } from '../common/index.js';
import { defineConnector, Secret } from '../plugin-api/index.js';
import { sqliteStorage } from '../storage/index.js';

const webhookType = defineConnector({
  type: 'webhook',
  version: '1.0.0',
  directions: ['source', 'destination', 'bidirectional'],
  configSchema: Type.Object({ signing_secret: Secret(Type.String()), url: Type.Optional(Type.String()) }, { additionalProperties: false }),
});
const otherType = defineConnector({ type: 'other', version: '1.0.0', directions: ['source'], configSchema: Type.Object({ signing_secret: Type.Optional(Type.String()) }) });

const NOW = Date.parse('2026-11-22T10:00:00.000Z');
let engine: Engine;
let secret: string;
let connectorId: string;

function signed(body: string, id = 'msg_1', timestamp = NOW / 1000) {
  return webhookHeaders({ id, timestamp, body }, [secret]);
}
async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise;
    return undefined;
  } catch (error) {
    return isFerryError(error) ? error.code : String(error);
  }
}

beforeEach(async () => {
  engine = await createEngine({ storage: sqliteStorage({ filename: ':memory:' }), plugins: [webhookType, otherType], clock: { now: () => NOW, setTimeout: () => ({ cancel() {} }) } });
  await engine.start();
  secret = generateWebhookSecret();
  connectorId = (await engine.connectors.create('ws1', { type: 'webhook', direction: 'source', config: { signing_secret: secret } })).id;
});
afterEach(() => engine.stop());

describe('ingest', () => {
  it('stores one signed event in the inbox of the right workspace, with occurred_at defaulting to now', async () => {
    const body = JSON.stringify({ type: 'order.created', payload: { id: 7 } });
    const result = await engine.ingest.receive(connectorId, body, signed(body));
    expect(result).toMatchObject({ workspace_id: 'ws1', connector_id: connectorId, count: 1 });
    const [row] = await engineContext(engine).storage.repos.inbox.readAfter(connectorId, 0, 10);
    expect(row).toMatchObject({ id: result.ids[0], workspace_id: 'ws1', type: 'order.created', payload: { id: 7 }, occurred_at: '2026-11-22T10:00:00.000Z', message_id: 'msg_1' });
  });

  it('keeps numbers a double cannot hold as strings of their exact digits', async () => {
    const body = '{"type":"order.created","payload":{"big":12345678901234567890,"huge":1e400,"total":12.5}}';
    await engine.ingest.receive(connectorId, body, signed(body));
    const [row] = await engineContext(engine).storage.repos.inbox.readAfter(connectorId, 0, 10);
    expect(row!.payload).toEqual({ big: '12345678901234567890', huge: '1e400', total: 12.5 });
  });

  it('stores a batch once even when the sender retries it', async () => {
    const body = JSON.stringify({ events: [{ type: 'a', payload: {} }, { type: 'b', occurred_at: '2026-11-22T09:00:00+01:00', payload: { x: 1 } }] });
    const first = await engine.ingest.receive(connectorId, body, signed(body, 'msg_batch'));
    const again = await engine.ingest.receive(connectorId, body, signed(body, 'msg_batch'));
    expect(again.ids).toEqual(first.ids);
    const rows = await engineContext(engine).storage.repos.inbox.readAfter(connectorId, 0, 10);
    expect(rows.map((r) => [r.type, r.occurred_at])).toEqual([
      ['a', '2026-11-22T10:00:00.000Z'],
      ['b', '2026-11-22T08:00:00.000Z'],
    ]);
  });

  it('refuses unsigned, mis-signed and stale requests, and says nothing about other connectors', async () => {
    const body = JSON.stringify({ type: 'a', payload: {} });
    expect(await codeOf(engine.ingest.receive(connectorId, body, {}))).toBe('unauthenticated');
    expect(await codeOf(engine.ingest.receive(connectorId, body + ' ', signed(body)))).toBe('unauthenticated');
    expect(await codeOf(engine.ingest.receive(connectorId, body, signed(body, 'm', NOW / 1000 - 3600)))).toBe('unauthenticated');
    const destination = await engine.connectors.create('ws1', { type: 'webhook', direction: 'destination', config: { signing_secret: secret, url: 'https://example.com' } });
    const other = await engine.connectors.create('ws1', { type: 'other', direction: 'source', config: { signing_secret: secret } });
    for (const id of [destination.id, other.id, 'con_unknown']) expect(await codeOf(engine.ingest.receive(id, body, signed(body)))).toBe('not_found');
    expect(await engineContext(engine).storage.repos.inbox.readAfter(connectorId, 0, 10)).toEqual([]);
  });

  it('checks the body only once the signature holds, and lists every problem', async () => {
    expect(await codeOf(engine.ingest.receive(connectorId, '{"type":', signed('{"type":')))).toBe('malformed_json');
    const body = JSON.stringify({ events: [{ type: '', payload: {} }, { type: 'x', payload: [], extra: 1 }] });
    try {
      await engine.ingest.receive(connectorId, body, signed(body));
      expect.unreachable();
    } catch (error) {
      expect(isFerryError(error, 'validation_failed')).toBe(true);
      const pointers = (error as { errors: { pointer: string }[] }).errors.map((e) => e.pointer);
      expect(pointers).toEqual(expect.arrayContaining(['/events/0/type', '/events/1/payload', '/events/1/extra']));
    }
    const tooMany = JSON.stringify({ events: Array.from({ length: 1001 }, () => ({ type: 't', payload: {} })) });
    expect(await codeOf(engine.ingest.receive(connectorId, tooMany, signed(tooMany)))).toBe('validation_failed');
  });

  it('takes a changed signing secret at once: the old one is refused on the next request', async () => {
    const body = JSON.stringify({ type: 'a', payload: {} });
    await engine.ingest.receive(connectorId, body, signed(body, 'msg_old_1'));
    const previous = secret;
    secret = generateWebhookSecret();
    await engine.connectors.update('ws1', connectorId, { config: { signing_secret: secret } });
    expect(await codeOf(engine.ingest.receive(connectorId, body, webhookHeaders({ id: 'msg_old_2', timestamp: NOW / 1000, body }, [previous])))).toBe('unauthenticated');
    await engine.ingest.receive(connectorId, body, signed(body, 'msg_new'));
    await engine.connectors.delete('ws1', connectorId);
    expect(await codeOf(engine.ingest.receive(connectorId, body, signed(body, 'msg_gone')))).toBe('not_found');
  });

  it('refuses U+0000 and lone surrogates (invalid_character) wherever they are, escaped or not, and keeps escaped text that is fine', async () => {
    const refused: [string, string][] = [
      ['{"type":"a","payload":{"note":"x\\u0000y"}}', '/payload/note'],
      ['{"type":"a","payload":{"\\udc00":1}}', '/payload/\udc00'],
      ['{"events":[{"type":"a","payload":{}},{"type":"b\\uD800","payload":{}}]}', '/events/1/type'],
      [`{"type":"a","payload":{"note":"x\ud800"}}`, '/payload/note'],
    ];
    for (const [i, [body, pointer]] of refused.entries()) {
      try {
        await engine.ingest.receive(connectorId, body, signed(body, `msg_bad_${i}`));
        expect.unreachable(body);
      } catch (error) {
        expect(isFerryError(error, 'invalid_character'), body).toBe(true);
        expect((error as { errors: { pointer: string; code: string }[] }).errors, body).toEqual([expect.objectContaining({ pointer, code: 'invalid_character' })]);
      }
    }
    const fine = '{"type":"a","payload":{"smile":"\\ud83d\\ude00","path":"C:\\\\u0000","accent":"\\u00e9"}}';
    await engine.ingest.receive(connectorId, fine, signed(fine, 'msg_fine'));
    const rows = await engineContext(engine).storage.repos.inbox.readAfter(connectorId, 0, 10);
    expect(rows.map((r) => r.payload)).toEqual([{ smile: '\u{1F600}', path: 'C:\\u0000', accent: 'é' }]);
  });
});

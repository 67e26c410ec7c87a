import { Type, type TSchema } from '@sinclair/typebox';
import { verifyWebhook, WebhookVerificationError } from '../crypto/index.js';
import { parseExactJson, normalizeTimestamp, FerryError, notFound, validationError, schemaErrors } from '../common/index.js';
import { nowIso, reader, transact, type EngineContext } from '../engine/index.js';
import type { JsonObject } from '../plugin-api/index.js';
import type { InboxRow } from '../storage/index.js';
import { openConnector } from '../connectors/index.js';

/** Most events one ingest request may carry (contract section 11). */
export const MAX_INGEST_EVENTS = 1000;

const IngestEvent = Type.Object(
  {
    type: Type.String({ minLength: 1, maxLength: 200 }),
    occurred_at: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    payload: Type.Object({}, { additionalProperties: true }),
  },
  { additionalProperties: false },
);
const IngestBatch = Type.Object({ events: Type.Array(IngestEvent, { minItems: 1, maxItems: MAX_INGEST_EVENTS }) }, { additionalProperties: false });

/** What an ingest request stored. */
export interface IngestResult {
  workspace_id: string;
  connector_id: string;
  /** Events in the request. */
  count: number;
  /** Their inbox ids, in request order; a retried message keeps the ids of its first arrival. */
  ids: string[];
}

type Received = { type: string; occurred_at?: string; payload: JsonObject };

/**
 * The webhook source endpoint (contract section 11): events POSTed to a `webhook` connector,
 * authenticated by its signing secret, stored durably in the inbox before the answer; the
 * pipeline reads them from there. A sender's retry (same `webhook-id`) is stored once.
 */
export class IngestService {
  constructor(private readonly ctx: EngineContext) {}

  /**
   * Verifies, parses and stores one request. An unknown connector, one of another type or a
   * destination-only one is `not_found` (which of these is not said); a bad signature
   * `unauthenticated`; a body that is not JSON `malformed_json`; a bad event `validation_failed`.
   */
  async receive(connectorId: string, rawBody: string | Uint8Array, headers: Record<string, string | string[] | undefined>): Promise<IngestResult> {
    const row = await reader(this.ctx).connectors.getAnyWorkspace(connectorId);
    if (!row || row.type !== 'webhook' || row.direction === 'destination') throw notFound('connector', connectorId);
    const opened = await openConnector(this.ctx, row.workspace_id, row.id);
    const secret = opened.config.signing_secret;
    let messageId: string;
    try {
      if (typeof secret !== 'string') throw new WebhookVerificationError('bad_signature');
      messageId = verifyWebhook(rawBody, headers, secret, { now: this.ctx.clock.now() }).id;
    } catch (error) {
      if (error instanceof WebhookVerificationError || error instanceof FerryError) {
        this.ctx.logger.info({ connector_id: row.id, reason: error instanceof WebhookVerificationError ? error.reason : 'bad_secret' }, 'ingest request refused');
        throw new FerryError('unauthenticated', 'The request is not signed with this connector\'s signing secret.');
      }
      throw error;
    }
    const events = this.parse(typeof rawBody === 'string' ? rawBody : Buffer.from(rawBody).toString('utf8'));
    const now = nowIso(this.ctx);
    const rows: InboxRow[] = events.list.map((event, index) => ({
      id: this.ctx.ids.create('event'),
      workspace_id: row.workspace_id,
      connector_id: row.id,
      message_id: events.batch ? `${messageId}:${index}` : messageId,
      type: event.type,
      occurred_at: event.occurred_at === undefined ? now : normalizeTimestamp(event.occurred_at, events.batch ? `/events/${index}/occurred_at` : '/occurred_at'),
      payload: event.payload,
      received_at: now,
    }));
    const stored = await transact(this.ctx, async (repos) => {
      await repos.inbox.insertMany(rows);
      return repos.inbox.idsOf(row.id, rows.map((r) => r.message_id));
    });
    return { workspace_id: row.workspace_id, connector_id: row.id, count: rows.length, ids: rows.map((r) => stored.get(r.message_id) ?? r.id) };
  }

  private parse(text: string): { batch: boolean; list: Received[] } {
    let body: unknown;
    try {
      // Exact: a number a double cannot hold is kept as a string of its digits, not rounded.
      body = parseExactJson(text);
    } catch {
      throw new FerryError('malformed_json', 'The request body is not valid JSON.');
    }
    const batch = body !== null && typeof body === 'object' && !Array.isArray(body) && 'events' in body;
    const schema: TSchema = batch ? IngestBatch : IngestEvent;
    const errors = schemaErrors(schema, body);
    if (errors.length > 0) throw validationError(errors);
    return { batch, list: batch ? (body as { events: Received[] }).events : [body as Received] };
  }
}

import { Type, type TSchema } from '@sinclair/typebox';
import { verifyWebhook, WebhookVerificationError } from '../crypto/index.js';
import { compile, decodeUtf8Exact, exceedsJsonDepth, hasInvalidCharacter, parseExactJson, normalizeTimestamp, FerryError, notFound, tooDeepError, validationError, schemaErrors } from '../common/index.js';
import { nowIso, reader, type EngineContext } from '../context/index.js';
import type { JsonObject } from '../plugin-api/index.js';
import type { ConnectorRow } from '../storage/index.js';
import { openConnector } from '../connectors/index.js';

/** Most events one ingest request may carry (docs/api.md, Ingest: webhook sources). */
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
 * A `\u` escape that decodes to U+0000 or to a surrogate. Every other character of a parsed
 * document is spelled as itself in its text (JSON's other escapes stand for characters that are
 * fine), so a text with no such escape and no such character of its own parses to strings and
 * keys that all are fine: one scan of the text instead of a walk over every string. A `\\u0000`
 * (an escaped backslash) also matches, and only costs that walk.
 */
const ESCAPED_INVALID = /\\u(?:0000|[dD][89a-fA-F])/;

/** Connectors whose signing secret {@link IngestService} keeps opened; the oldest is dropped past this many. */
const OPENED_SECRETS = 1000;

/** A connector's opened signing secret, with the stored fields it was opened from. */
interface OpenedSecret {
  secrets: string | null;
  config: string;
  signingSecret: unknown;
}

/**
 * The webhook source endpoint (docs/api.md, Ingest: webhook sources): events POSTed to a `webhook` connector,
 * authenticated by its signing secret, stored durably in the inbox before the answer; the
 * pipeline reads them from there. A sender's retry (same `webhook-id`) is stored once.
 */
export class IngestService {
  /**
   * Signing secrets by connector id, valid while the connector's row holds the same sealed
   * secrets and config: opening one costs a second read of the row, a decryption and a copy of
   * its config with defaults, on every request of a sender that sends many. The row itself is
   * read on every request, so a deleted connector or a changed secret takes effect at once.
   */
  private readonly opened = new Map<string, OpenedSecret>();

  constructor(private readonly ctx: EngineContext) {}

  /**
   * Verifies, parses and stores one request. An unknown connector, one of another type or a
   * destination-only one is `not_found` (which of these is not said); a bad signature
   * `unauthenticated`, checked over `rawBody` exactly as received; bytes that are not UTF-8
   * `invalid_encoding`; a body that is not JSON `malformed_json`; one nested more than 64 deep or
   * a bad event `validation_failed`.
   */
  async receive(connectorId: string, rawBody: string | Uint8Array, headers: Record<string, string | string[] | undefined>): Promise<IngestResult> {
    const row = await reader(this.ctx).connectors.getAnyWorkspace(connectorId);
    if (!row || row.type !== 'webhook' || row.direction === 'destination') throw notFound('connector', connectorId);
    const secret = await this.signingSecret(row);
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
    // Decoded only now: the signature covers the bytes as they arrived (Standard Webhooks), and
    // bytes that are not UTF-8 are refused, never replaced, so what is stored is what was signed.
    const events = this.parse(typeof rawBody === 'string' ? rawBody : decodeUtf8Exact(rawBody, 'The request body'));
    const now = nowIso(this.ctx);
    const stored = events.list.map((event, index) => ({
      id: this.ctx.ids.create('event'),
      message_id: events.batch ? `${messageId}:${index}` : messageId,
      type: event.type,
      occurred_at: event.occurred_at === undefined ? now : normalizeTimestamp(event.occurred_at, events.batch ? `/events/${index}/occurred_at` : '/occurred_at'),
      payload: event.payload,
    }));
    // No transaction of its own: the repository stores the batch atomically (one statement on
    // Postgres, one transaction on SQLite), and nothing else is written with it.
    const ids = await reader(this.ctx).inbox.storeBatch({ workspace_id: row.workspace_id, connector_id: row.id, received_at: now, events: stored }, this.ctx.storage.dialect);
    return { workspace_id: row.workspace_id, connector_id: row.id, count: stored.length, ids };
  }

  /** The connector's signing secret, opened again only when its stored secrets or config changed (see {@link opened}). */
  private async signingSecret(row: ConnectorRow): Promise<unknown> {
    const cached = this.opened.get(row.id);
    if (cached && cached.secrets === row.secrets && cached.config === JSON.stringify(row.config)) return cached.signingSecret;
    const opened = await openConnector(this.ctx, row.workspace_id, row.id);
    // Keyed on the row it was opened from, which may be newer than `row`.
    const entry: OpenedSecret = { secrets: opened.row.secrets, config: JSON.stringify(opened.row.config), signingSecret: opened.config.signing_secret };
    this.opened.delete(row.id);
    if (this.opened.size >= OPENED_SECRETS) this.opened.delete(this.opened.keys().next().value!);
    this.opened.set(row.id, entry);
    return entry.signingSecret;
  }

  private parse(text: string): { batch: boolean; list: Received[] } {
    // Before any parser or walker: no depth of nesting may reach a recursion (docs/api.md, Bodies).
    if (exceedsJsonDepth(text)) throw tooDeepError();
    let body: unknown;
    try {
      // Exact: a number a double cannot hold is kept as a string of its digits, not rounded.
      body = parseExactJson(text);
    } catch {
      throw new FerryError('malformed_json', 'The request body is not valid JSON.');
    }
    const batch = body !== null && typeof body === 'object' && !Array.isArray(body) && 'events' in body;
    const schema: TSchema = batch ? IngestBatch : IngestEvent;
    // The common case in two cheap checks; the full walk only to name what is wrong.
    if (!compile(schema).Check(body) || ESCAPED_INVALID.test(text) || hasInvalidCharacter(text)) {
      const errors = schemaErrors(schema, body);
      if (errors.length > 0) throw validationError(errors);
    }
    return { batch, list: batch ? (body as { events: Received[] }).events : [body as Received] };
  }
}

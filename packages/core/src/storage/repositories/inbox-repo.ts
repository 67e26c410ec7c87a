import type { StorageDialect } from '../dialect.js';
import { fromJson, INSERT_CHUNK, toInt, toJson, type Db } from '../sql-helpers.js';
import { inSqliteTransaction, sqliteStatement } from '../sqlite-direct.js';
import { canonicalTimestamp } from './events-repo.js';
import type { JsonObject } from '../../plugin-api/index.js';

/** Row of `webhook_inbox`: an event received on `POST /v2/ingest/{connector_id}`, stored durably before the 202. */
export interface InboxRow {
  id: string;
  workspace_id: string;
  connector_id: string;
  /** The sender's `webhook-id` (and index within a batch): the dedupe key. */
  message_id: string;
  type: string;
  occurred_at: string;
  payload: JsonObject;
  received_at: string;
}

/** A stored inbox row with its position. */
export interface InboxEntry extends InboxRow {
  seq: number;
}

/** One request's events for {@link InboxRepo.storeBatch}: what its rows share, and each event's own columns. */
export interface InboxBatch {
  workspace_id: string;
  connector_id: string;
  /** ISO 8601 UTC with milliseconds, the stored form. */
  received_at: string;
  events: readonly InboxBatchEvent[];
}

/** An event of an {@link InboxBatch}. */
export interface InboxBatchEvent {
  id: string;
  message_id: string;
  type: string;
  /** Converted to the stored form (ISO 8601 UTC with milliseconds) unless already in it. */
  occurred_at: string;
  payload: JsonObject;
}

/** The stored form of a time, which {@link storedTime} leaves alone. */
const CANONICAL_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** A time in its stored form: a shape check costs far less than parsing and spelling it again. */
function storedTime(value: string): string {
  return CANONICAL_TIME.test(value) ? value : canonicalTimestamp(value);
}

const INSERT_SQLITE = `INSERT INTO webhook_inbox (id, workspace_id, connector_id, message_id, type, occurred_at, payload, received_at)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (connector_id, message_id) DO NOTHING`;
const ID_OF_SQLITE = 'SELECT id FROM webhook_inbox WHERE connector_id = ? AND message_id = ?';
/** ID_OF_SQLITE prepared (better-sqlite3 gives a SELECT's statement `get`). */
type IdLookup = { get(params: readonly unknown[]): { id: string } | undefined };

/**
 * The whole batch in one statement, so it needs no transaction (it is atomic on its own) and
 * costs one round trip: the events travel as one JSON parameter, their payloads embedded as
 * JSON (`json` keeps their text exactly as sent), in request order (`ORDER BY n`, so `seq`
 * follows it). Only the rows inserted come back: the others are a sender's retry.
 */
const INSERT_PG = `INSERT INTO webhook_inbox (id, workspace_id, connector_id, message_id, type, occurred_at, payload, received_at)
  SELECT r.id, ?, ?, r.message_id, r.type, r.occurred_at, r.payload::text, ?
  FROM ROWS FROM (json_to_recordset(?::json) AS (id text, message_id text, type text, occurred_at text, payload json)) WITH ORDINALITY AS r(id, message_id, type, occurred_at, payload, n)
  ORDER BY r.n
  ON CONFLICT (connector_id, message_id) DO NOTHING
  RETURNING message_id`;

/** The webhook inbox: what a webhook source connector reads from, in arrival order. */
export class InboxRepo {
  constructor(private readonly db: Db) {}

  /** Stores events; a message id seen before for the connector is ignored (sender retries). */
  async insertMany(rows: readonly InboxRow[]): Promise<void> {
    for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
      const chunk = rows.slice(i, i + INSERT_CHUNK).map((r) => ({ ...r, occurred_at: canonicalTimestamp(r.occurred_at), payload: toJson(r.payload) }));
      await this.db('webhook_inbox').insert(chunk).onConflict(['connector_id', 'message_id']).ignore();
    }
  }

  /**
   * Stores one request's events, in order, ignoring a message id seen before for the connector
   * (a sender's retry); all or none of them. Answers the stored id of each event, in order: its
   * own, or the first arrival's for a retried one.
   *
   * This is the ingest endpoint's hot path. On SQLite, a cached prepared statement run per row
   * in one transaction (the caller's, if `db` is one); a retried row (no change) has its id read
   * back in the same transaction. On Postgres, one statement (see INSERT_PG), and a second one
   * only for the ids of retried rows, which are committed first arrivals by then: a concurrent
   * first arrival of the same message makes the INSERT wait for its commit.
   */
  async storeBatch(batch: InboxBatch, dialect: StorageDialect): Promise<string[]> {
    const { events } = batch;
    const ids = events.map((e) => e.id);
    if (events.length === 0) return ids;
    if (dialect.inProcess) {
      const rows = events.map((e) => [e.id, batch.workspace_id, batch.connector_id, e.message_id, e.type, storedTime(e.occurred_at), toJson(e.payload), batch.received_at]);
      await inSqliteTransaction(this.db, (conn) => {
        const insert = sqliteStatement(conn, INSERT_SQLITE);
        for (let i = 0; i < rows.length; i++) {
          if ((insert.run(rows[i]!) as { changes: number }).changes === 1) continue;
          const stored = (sqliteStatement(conn, ID_OF_SQLITE) as unknown as IdLookup).get([batch.connector_id, events[i]!.message_id]);
          if (stored) ids[i] = stored.id;
        }
      });
      return ids;
    }
    const json = JSON.stringify(events.map((e) => ({ id: e.id, message_id: e.message_id, type: e.type, occurred_at: storedTime(e.occurred_at), payload: e.payload })));
    const inserted = dialect.rows<{ message_id: string }>(await this.db.raw(INSERT_PG, [batch.workspace_id, batch.connector_id, batch.received_at, json]));
    if (inserted.length === events.length) return ids;
    const fresh = new Set(inserted.map((r) => r.message_id));
    const retried = events.filter((e) => !fresh.has(e.message_id)).map((e) => e.message_id);
    const stored = await this.idsOf(batch.connector_id, retried);
    events.forEach((e, i) => {
      if (!fresh.has(e.message_id)) ids[i] = stored.get(e.message_id) ?? e.id;
    });
    return ids;
  }

  /** Ids of the stored events with these message ids (first arrivals win), in no particular order. */
  async idsOf(connectorId: string, messageIds: readonly string[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    for (let i = 0; i < messageIds.length; i += 500) {
      const rows = (await this.db('webhook_inbox').where({ connector_id: connectorId }).whereIn('message_id', messageIds.slice(i, i + 500)).select('id', 'message_id')) as { id: string; message_id: string }[];
      for (const row of rows) out.set(row.message_id, row.id);
    }
    return out;
  }

  /** Events of a connector after position `seq`, oldest first. */
  async readAfter(connectorId: string, seq: number, limit: number): Promise<InboxEntry[]> {
    const rows = (await this.db('webhook_inbox').where({ connector_id: connectorId }).andWhere('seq', '>', seq).orderBy('seq').limit(limit)) as Record<string, unknown>[];
    return rows.map((row) => ({ ...(row as unknown as InboxEntry), seq: toInt(row.seq), payload: fromJson<JsonObject>(row.payload) }));
  }
}

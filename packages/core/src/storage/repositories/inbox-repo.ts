import { fromJson, INSERT_CHUNK, toInt, toJson, type Db } from '../sql-helpers.js';
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

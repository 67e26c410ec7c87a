import { ConnectorError, type ConnectorDefinition } from '@ferry/core';
import type pg from 'pg';
import { parseTableName } from '../identifiers.js';
import { estimateRows, tableColumns, tableKey } from './backfill.js';
import { rowFilter } from './backfill-where.js';
import { resolveTables, type ChangeSourceSettings } from './change-source.js';

/** What `planBackfill` is asked: the tables, filters and chunk size of a backfill. */
export type BackfillPlanInput = Parameters<NonNullable<ConnectorDefinition['planBackfill']>>[1];
/** What `planBackfill` answers. */
export type BackfillPlan = Awaited<ReturnType<NonNullable<ConnectorDefinition['planBackfill']>>>;

/**
 * Checks a backfill asked of a change-capturing source before it is recorded: each table asked
 * for is one the pipeline captures (`unknown_table`), has a key to read it in chunks
 * (`backfill_needs_key`), and its filter parses and uses only what is allowed (`invalid_where`);
 * the server must write watermarks into the stream (Postgres 14+, `backfill_unsupported`).
 * Answers the tables in reading order as `schema.name`, with the server's estimate of their rows,
 * and the filters keyed by those names.
 */
export async function planChangeBackfill(client: pg.Client, settings: ChangeSourceSettings, input: BackfillPlanInput): Promise<BackfillPlan> {
  const { rows } = await client.query<{ version: number }>(`SELECT current_setting('server_version_num')::int AS version`);
  if ((rows[0]?.version ?? 0) < 140000) {
    throw new ConnectorError('backfill_unsupported', 'Backfills need Postgres 14 or later: their watermarks are logical messages in the replication stream.', { retryable: false });
  }
  const captured = await resolveTables(client, settings.tables);
  /** The captured table a name the user wrote stands for (resolved as the server would). */
  const find = async (text: string) => {
    const name = parseTableName(text);
    const found = name && (await resolveTables(client, [name]).catch(() => []))[0];
    const table = found ? captured.find((t) => t.oid === found.oid) : undefined;
    if (!table) throw new ConnectorError('unknown_table', `${text} is not one of the tables the pipeline captures (${captured.map((t) => `${t.schema}.${t.name}`).join(', ')}).`, { retryable: false });
    return table;
  };
  const reading = input.tables === null ? captured : await Promise.all(input.tables.map(find));
  const where: Record<string, string> = {};
  for (const [text, predicate] of Object.entries(input.where ?? {})) {
    const table = await find(text);
    if (!reading.includes(table)) throw new ConnectorError('unknown_table', `${text} has a where but is not one of the backfill's tables.`, { retryable: false });
    where[`${table.schema}.${table.name}`] = predicate;
  }
  const tables: Array<{ table: string; rowsEstimated: number | null }> = [];
  for (const table of reading) {
    const name = `${table.schema}.${table.name}`;
    if (tables.some((t) => t.table === name)) continue;
    await tableKey(client, table);
    if (where[name] !== undefined) await rowFilter(name, where[name], await tableColumns(client, table.oid));
    tables.push({ table: name, rowsEstimated: await estimateRows(client, table.oid) });
  }
  return { tables, ...(input.where ? { where } : {}) };
}

import { ConnectorError, type ConnectorDirection } from '@ferry/core';
import type pg from 'pg';
import type { PostgresConfig } from './config.js';
import { describeTable, destinationSettings } from './destination.js';
import { parseTableName } from './identifiers.js';
import { readSql, sourceSettings } from './source.js';

/**
 * What a check proves beyond the connection, for the side the connector was created as: a
 * source's read runs with no rows (`LIMIT 0`), so the table or query, the cursor column and the
 * mapped columns exist and the role may read them; a destination's table exists, the role may
 * insert into it, and it takes Ferry's rows (see {@link describeTable}: a column whose type,
 * NOT NULL or generation would refuse every row is `configuration_invalid`, naming it). With
 * `create_table` and no table yet, the first write creates the default layout, which takes them:
 * what remains to prove is that the schema exists and the role may create a table in it (since
 * Postgres 15 `public` no longer lets every role do so). Throws a non-retryable
 * {@link ConnectorError} naming what is missing; server errors are the caller's to classify.
 */
export async function checkSide(client: pg.Client, config: PostgresConfig, direction: ConnectorDirection): Promise<void> {
  if (direction === 'source') {
    const settings = sourceSettings(config);
    const result = await client.query(readSql(settings, false), [0]);
    const names = new Set(result.fields.map((f) => f.name));
    for (const column of [settings.typeColumn, settings.occurredAtColumn]) {
      if (column !== undefined && !names.has(column)) {
        throw new ConnectorError('configuration_invalid', `The source has no column ${column}.`, { retryable: false });
      }
    }
    return;
  }
  const settings = destinationSettings(config);
  if (settings.createTable) {
    // An unqualified table is created in the first schema of the search path that exists.
    const schema = parseTableName(config.table!)?.schema ?? null;
    const { rows } = await client.query<{ found: boolean; nspname: string | null; creatable: boolean | null }>(
      `SELECT to_regclass($1) IS NOT NULL AS found, n.nspname, has_schema_privilege(n.oid, 'CREATE') AS creatable
         FROM (SELECT coalesce($2::text, current_schema()) AS name) s LEFT JOIN pg_namespace n ON n.nspname = s.name`,
      [settings.table, schema],
    );
    const target = rows[0]!;
    if (!target.found) {
      if (target.nspname === null) {
        const where = schema === null ? 'No schema of the search path exists' : `The schema ${schema} does not exist`;
        throw new ConnectorError('configuration_invalid', `${where}: create_table has nowhere to create ${settings.table}.`, { retryable: false });
      }
      if (!target.creatable) {
        throw new ConnectorError('permission_denied', `The connector's role may not create tables in the schema ${target.nspname} (create_table): GRANT CREATE ON SCHEMA, or create ${settings.table} yourself.`, { retryable: false });
      }
      return;
    }
  }
  await describeTable(client, settings);
}

import { Secret, type ConnectorDirection, type ConnectorOutbound } from '@ferry/core';
import { Type, type Static } from '@sinclair/typebox';
import { isIdentifier, parseTableName } from './identifiers.js';

/** Default server port. */
export const DEFAULT_PORT = 5432;
/** Default `statement_timeout` of every pooled connection, in milliseconds. */
export const DEFAULT_STATEMENT_TIMEOUT_MS = 30_000;
/** Default most rows a source reads per batch. */
export const DEFAULT_SOURCE_BATCH_SIZE = 1000;
/** Default pause between polls of a streaming source that is caught up, in milliseconds. */
export const DEFAULT_POLL_INTERVAL_MS = 1000;

/** Most tables one change-capturing source follows. */
export const MAX_CAPTURE_TABLES = 100;

/**
 * A replication slot or publication name: lower-case letters, digits and `_`, at most 63
 * characters (Postgres's slot name rules, which are stricter than an identifier's).
 */
export const SLOT_NAME = /^[a-z0-9_]{1,63}$/;

/** The columns a destination writes besides its payload or mapped columns. */
export const RESERVED_COLUMNS = ['id', 'type', 'occurred_at'] as const;

/**
 * The `postgres` connector's config, as its README's Config table describes it (docs/api.md,
 * Connector types: these keys are fixed; options may be added, never renamed). Which fields a direction needs is checked by
 * {@link validatePostgresConfig}, since the schema is shared by both directions.
 */
export const postgresConfigSchema = Type.Object(
  {
    connection_string: Type.Optional(Secret(Type.String({ minLength: 1, maxLength: 4096, description: 'postgres:// or postgresql:// URL; instead of host, port, database, user and password.' }))),
    host: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535, default: DEFAULT_PORT })),
    database: Type.Optional(Type.String({ minLength: 1, maxLength: 63 })),
    user: Type.Optional(Type.String({ minLength: 1, maxLength: 63 })),
    password: Type.Optional(Secret(Type.String({ maxLength: 1024 }))),
    ssl: Type.Optional(
      Type.Union([
        Type.Boolean(),
        Type.Object(
          {
            ca: Type.Optional(Type.String({ minLength: 1, maxLength: 65536, description: 'PEM certificate(s) to trust.' })),
            reject_unauthorized: Type.Optional(Type.Boolean({ description: 'Default true: refuse a server certificate that does not verify.' })),
          },
          { additionalProperties: false },
        ),
      ]),
    ),
    statement_timeout_ms: Type.Optional(Type.Integer({ minimum: 0, maximum: 86_400_000, default: DEFAULT_STATEMENT_TIMEOUT_MS })),
    admin_connection_string: Type.Optional(Secret(Type.String({ minLength: 1, maxLength: 4096, description: 'A role allowed to ALTER ROLE: makes body-less rotation possible.' }))),

    table: Type.Optional(Type.String({ minLength: 1, maxLength: 127, description: '`table` or `schema.table`, plain identifiers, case-sensitive.' })),
    query: Type.Optional(Type.String({ minLength: 1, maxLength: 65536, description: 'Source: a SELECT read as a subquery instead of a table.' })),
    cursor_column: Type.Optional(Type.String({ minLength: 1, maxLength: 63 })),
    type: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    type_column: Type.Optional(Type.String({ minLength: 1, maxLength: 63 })),
    occurred_at_column: Type.Optional(Type.String({ minLength: 1, maxLength: 63 })),
    batch_size: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000, default: DEFAULT_SOURCE_BATCH_SIZE })),
    poll_interval_ms: Type.Optional(Type.Integer({ minimum: 10, maximum: 3_600_000, default: DEFAULT_POLL_INTERVAL_MS })),

    capture: Type.Optional(
      Type.Union([Type.Literal('rows'), Type.Literal('changes')], {
        // No schema default: the engine fills defaults into every direction's config, and a
        // destination has no capture. Absent means `rows`.
        description: 'Source: `rows` polls by cursor_column; `changes` reads the tables\' change stream (logical replication).',
      }),
    ),
    tables: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 127 }), { minItems: 1, maxItems: MAX_CAPTURE_TABLES, uniqueItems: true, description: 'capture "changes": `table` or `schema.table` names.' }),
    ),
    publication: Type.Optional(Type.String({ minLength: 1, maxLength: 63, description: 'capture "changes": default `ferry_<pipeline id>`.' })),
    slot: Type.Optional(Type.String({ minLength: 1, maxLength: 63, description: 'capture "changes": default `ferry_<pipeline id>`.' })),
    snapshot: Type.Optional(
      Type.Union([Type.Literal('incremental'), Type.Literal('initial'), Type.Literal('never')], {
        description:
          'capture "changes": `incremental` reads the rows present as a backfill, in key-ordered chunks interleaved with the changes; `initial` (absent means so) in one exported snapshot when the slot is created first; `never` not at all.',
      }),
    ),

    create_table: Type.Optional(Type.Boolean({ default: false })),
    mode: Type.Optional(Type.Union([Type.Literal('upsert'), Type.Literal('insert')], { default: 'upsert' })),
    columns: Type.Optional(
      Type.Record(Type.String({ minLength: 1, maxLength: 63 }), Type.String({ minLength: 1, maxLength: 500 }), { minProperties: 1, maxProperties: 200 }),
    ),
  },
  { additionalProperties: false },
);

/** The config as the plugin sees it. */
export type PostgresConfig = Static<typeof postgresConfigSchema>;

/** A config problem, pointer relative to the config. */
export interface ConfigProblem {
  pointer: string;
  code: string;
  detail: string;
}

/** A payload path: dot-separated keys, none empty (`customer.id`). */
const PAYLOAD_PATH = /^[^.]+(\.[^.]+)*$/;

/**
 * The host pg connects to for a connection string: its host, or its `host` parameter (a Unix
 * socket directory), or `localhost`, pg's default, when it names none.
 */
export function connectionStringHost(connectionString: string): string {
  try {
    // As pg's parser reads it: a `host` parameter wins over the URL's host, both percent-decoded.
    const url = new URL(connectionString);
    return url.searchParams.get('host') || decodeURIComponent(url.hostname) || 'localhost';
  } catch {
    return 'localhost';
  }
}

/**
 * Rules the schema cannot say: how to connect, and what each direction needs. Details name the
 * field, never its value (a connection string holds a password). With the engine's `outbound`
 * policy, a host it refuses whatever DNS says (`host`, or the host of `connection_string` or
 * `admin_connection_string`: a literal private, loopback or metadata address in any spelling,
 * `localhost`, a Unix socket) is a `url_not_allowed` problem.
 */
export function validatePostgresConfig(config: PostgresConfig, direction: ConnectorDirection, outbound?: ConnectorOutbound): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const problem = (pointer: string, code: string, detail: string) => problems.push({ pointer, code, detail });
  const refusedHost = (pointer: string, host: string) => {
    const refused = outbound?.hostProblem(host);
    if (refused) problem(pointer, 'url_not_allowed', refused);
  };

  if (config.connection_string !== undefined) {
    if (!isPostgresUrl(config.connection_string)) problem('/connection_string', 'format', 'Expected a postgres:// or postgresql:// URL.');
    else refusedHost('/connection_string', connectionStringHost(config.connection_string));
    for (const field of ['host', 'database', 'user', 'password'] as const) {
      if (config[field] !== undefined) problem(`/${field}`, 'conflict', `Give either connection_string or ${field}, not both.`);
    }
  } else {
    if (config.host === undefined) problem('/host', 'required', 'Give host (with database and user), or connection_string.');
    else refusedHost('/host', config.host);
    if (config.database === undefined) problem('/database', 'required', 'Give database, or connection_string.');
    if (config.user === undefined) problem('/user', 'required', 'Give user, or connection_string.');
  }
  if (config.admin_connection_string !== undefined && !isPostgresUrl(config.admin_connection_string)) {
    problem('/admin_connection_string', 'format', 'Expected a postgres:// or postgresql:// URL.');
  } else if (config.admin_connection_string !== undefined) {
    refusedHost('/admin_connection_string', connectionStringHost(config.admin_connection_string));
  }

  if (config.table !== undefined && parseTableName(config.table) === null) {
    problem('/table', 'invalid_identifier', 'Expected `table` or `schema.table`: letters, digits, `_` or `$`, starting with a letter or `_`, at most 63 characters each.');
  }
  const identifier = (field: 'cursor_column' | 'type_column' | 'occurred_at_column') => {
    const value = config[field];
    if (value !== undefined && !isIdentifier(value)) {
      problem(`/${field}`, 'invalid_identifier', 'Expected a column name: letters, digits, `_` or `$`, starting with a letter or `_`, at most 63 characters.');
    }
  };

  if (direction === 'source' && config.capture === 'changes') {
    if (config.tables === undefined) problem('/tables', 'required', 'Change capture needs tables: an array of `table` or `schema.table`.');
    config.tables?.forEach((table, i) => {
      if (parseTableName(table) === null) problem(`/tables/${i}`, 'invalid_identifier', 'Expected `table` or `schema.table`: letters, digits, `_` or `$`, starting with a letter or `_`, at most 63 characters each.');
    });
    for (const field of ['table', 'query', 'cursor_column', 'type_column', 'occurred_at_column'] as const) {
      if (config[field] !== undefined) problem(`/${field}`, 'not_applicable', `${field} is for capture "rows"; change capture reads tables.`);
    }
    for (const field of ['publication', 'slot'] as const) {
      const value = config[field];
      if (value !== undefined && !SLOT_NAME.test(value)) problem(`/${field}`, 'invalid_identifier', 'Expected lower-case letters, digits and `_`, at most 63 characters.');
    }
  } else if (direction === 'source') {
    for (const field of ['tables', 'publication', 'slot', 'snapshot'] as const) {
      if (config[field] !== undefined) problem(`/${field}`, 'not_applicable', `${field} is for capture "changes".`);
    }
    if (config.table === undefined && config.query === undefined) problem('/table', 'required', 'A postgres source needs a table or a query.');
    if (config.table !== undefined && config.query !== undefined) problem('/query', 'conflict', 'Give either table or query, not both.');
    if (config.cursor_column === undefined) problem('/cursor_column', 'required', 'A postgres source needs a cursor_column: a unique, monotonic column such as a bigserial.');
    if (config.type === undefined && config.type_column === undefined) problem('/type', 'required', 'A postgres source needs a constant type or a type_column.');
    identifier('cursor_column');
    identifier('type_column');
    identifier('occurred_at_column');
  } else {
    for (const field of ['capture', 'tables', 'publication', 'slot', 'snapshot'] as const) {
      if (config[field] !== undefined) problem(`/${field}`, 'not_applicable', `${field} is for sources.`);
    }
    if (config.table === undefined) problem('/table', 'required', 'A postgres destination needs a table.');
    if (config.query !== undefined) problem('/query', 'not_applicable', 'query is for sources; a destination writes to table.');
    for (const [column, path] of Object.entries(config.columns ?? {})) {
      const pointer = `/columns/${column.replace(/~/g, '~0').replace(/\//g, '~1')}`;
      if (!isIdentifier(column)) problem(pointer, 'invalid_identifier', 'Expected a column name: letters, digits, `_` or `$`, starting with a letter or `_`, at most 63 characters.');
      else if ((RESERVED_COLUMNS as readonly string[]).includes(column)) problem(pointer, 'reserved', 'id, type and occurred_at are always written from the event itself.');
      if (!PAYLOAD_PATH.test(path)) problem(pointer, 'invalid_path', 'Expected a payload path of dot-separated keys, e.g. `customer.id`.');
    }
  }
  return problems;
}

/** True for a parseable postgres:// or postgresql:// URL. */
export function isPostgresUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return url.protocol === 'postgres:' || url.protocol === 'postgresql:';
  } catch {
    return false;
  }
}

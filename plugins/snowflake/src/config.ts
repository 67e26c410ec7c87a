import { Secret, type ConnectorDirection, type ConnectorOutbound } from '@ferry/core';
import { Type, type Static } from '@sinclair/typebox';
import { isIdentifier, parseObjectName } from './identifiers.js';

/** Default most rows a source reads per batch (the README's `batch_size`). */
export const DEFAULT_SOURCE_BATCH_SIZE = 1000;

/** The columns a destination writes, in this order (the README's destination layout). */
export const DESTINATION_COLUMNS = ['ID', 'TYPE', 'OCCURRED_AT', 'PAYLOAD'] as const;

/**
 * The `snowflake` connector's config, as its README's Config table describes it (docs/api.md,
 * Connector types: these keys are fixed; options may be added, never renamed). Which fields a direction needs is checked by
 * {@link validateSnowflakeConfig}, since the schema is shared by both directions.
 */
export const snowflakeConfigSchema = Type.Object(
  {
    account: Type.String({ minLength: 1, maxLength: 255, description: 'Account identifier, e.g. `myorg-myaccount` or `xy12345.eu-west-1`.' }),
    username: Type.String({ minLength: 1, maxLength: 255 }),
    password: Type.Optional(Secret(Type.String({ minLength: 1, maxLength: 1024 }))),
    private_key: Type.Optional(Secret(Type.String({ minLength: 1, maxLength: 16_384, description: 'PEM private key (PKCS#8) for key-pair authentication.' }))),
    private_key_passphrase: Type.Optional(Secret(Type.String({ minLength: 1, maxLength: 1024, description: 'Passphrase of an encrypted private_key.' }))),
    warehouse: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    database: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    schema: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    role: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    access_url: Type.Optional(Type.String({ minLength: 1, maxLength: 2048, description: 'https:// URL of the account, for private link (or a test server).' })),

    table: Type.Optional(Type.String({ minLength: 1, maxLength: 767, description: '`table`, `schema.table` or `database.schema.table`, plain identifiers (case-insensitive, as Snowflake resolves unquoted names).' })),
    query: Type.Optional(Type.String({ minLength: 1, maxLength: 65_536, description: 'Source: a SELECT read as a subquery instead of a table.' })),
    cursor_column: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    type: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    type_column: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    occurred_at_column: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    batch_size: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000, default: DEFAULT_SOURCE_BATCH_SIZE })),

    create_table: Type.Optional(Type.Boolean({ default: false })),
    mode: Type.Optional(Type.Union([Type.Literal('merge'), Type.Literal('insert')], { default: 'merge' })),
  },
  { additionalProperties: false },
);

/** The config as the plugin sees it. */
export type SnowflakeConfig = Static<typeof snowflakeConfigSchema>;

/** A config problem, pointer relative to the config. */
export interface ConfigProblem {
  pointer: string;
  code: string;
  detail: string;
}

/**
 * Rules the schema cannot say: how to log in, and what each direction needs. Details never hold
 * a value. With the engine's `outbound` policy, an `access_url` it refuses whatever DNS says
 * (http to a host not allowed, a literal private, loopback or metadata address, `localhost`) is
 * a `url_not_allowed` problem.
 */
export function validateSnowflakeConfig(config: SnowflakeConfig, direction: ConnectorDirection, outbound?: ConnectorOutbound): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const problem = (pointer: string, code: string, detail: string) => problems.push({ pointer, code, detail });

  if (config.password === undefined && config.private_key === undefined) problem('/password', 'required', 'Give a password, or a private_key for key-pair authentication.');
  if (config.password !== undefined && config.private_key !== undefined) problem('/private_key', 'conflict', 'Give either password or private_key, not both.');
  if (config.private_key_passphrase !== undefined && config.private_key === undefined) problem('/private_key_passphrase', 'not_applicable', 'private_key_passphrase unlocks a private_key; none is given.');
  if (config.private_key !== undefined && !/-----BEGIN (ENCRYPTED )?PRIVATE KEY-----/.test(config.private_key)) {
    problem('/private_key', 'format', 'Expected a PEM PKCS#8 private key (-----BEGIN PRIVATE KEY----- or -----BEGIN ENCRYPTED PRIVATE KEY-----).');
  }
  if (config.private_key !== undefined && /-----BEGIN ENCRYPTED PRIVATE KEY-----/.test(config.private_key) && config.private_key_passphrase === undefined) {
    problem('/private_key_passphrase', 'required', 'The private_key is encrypted: give its private_key_passphrase.');
  }
  if (config.access_url !== undefined && !isAccessUrl(config.access_url)) {
    problem('/access_url', 'format', 'Expected an https:// URL.');
  } else if (config.access_url !== undefined && outbound) {
    // https unless the host is allowed (a password must not cross a network in clear), and no
    // literal private, loopback or metadata address or localhost unless allowed.
    const refused = outbound.urlProblem(config.access_url);
    if (refused) problem('/access_url', 'url_not_allowed', refused);
  }
  if (config.table !== undefined && parseObjectName(config.table) === null) {
    problem('/table', 'invalid_identifier', 'Expected `table`, `schema.table` or `database.schema.table`: letters, digits, `_` or `$`, starting with a letter or `_`.');
  }
  const identifier = (field: 'cursor_column' | 'type_column' | 'occurred_at_column') => {
    const value = config[field];
    if (value !== undefined && !isIdentifier(value)) problem(`/${field}`, 'invalid_identifier', 'Expected a column name: letters, digits, `_` or `$`, starting with a letter or `_`.');
  };

  if (direction === 'source') {
    if (config.table === undefined && config.query === undefined) problem('/table', 'required', 'A snowflake source needs a table or a query.');
    if (config.table !== undefined && config.query !== undefined) problem('/query', 'conflict', 'Give either table or query, not both.');
    if (config.cursor_column === undefined) problem('/cursor_column', 'required', 'A snowflake source needs a cursor_column: a unique, increasing column such as an IDENTITY or a sequence.');
    if (config.type === undefined && config.type_column === undefined) problem('/type', 'required', 'A snowflake source needs a constant type or a type_column.');
    identifier('cursor_column');
    identifier('type_column');
    identifier('occurred_at_column');
  } else {
    if (config.table === undefined) problem('/table', 'required', 'A snowflake destination needs a table.');
    if (config.query !== undefined) problem('/query', 'not_applicable', 'query is for sources; a destination writes to table.');
  }
  return problems;
}

/** An http:// or https:// URL; which of them may be used is the outbound policy's to say. */
function isAccessUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return url.protocol === 'https:' || url.protocol === 'http:';
  } catch {
    return false;
  }
}

import { createHash, createPublicKey, randomUUID, verify, type KeyObject } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { gunzipSync } from 'node:zlib';
import pg from 'pg';
import { getSharedTestPostgres } from './embedded-postgres.js';
import { listenLoopback } from '@ferry/testing';
import { numberPlaceholders, rewriteFromValues, SNOWFLAKE_COMPAT_SQL, type BindValue } from './snowflake-sql.js';

/** A user the server lets log in: by password, by key pair (its public key), or both. */
export interface TestSnowflakeUser {
  password?: string;
  /** PEM public key (SPKI), as `ALTER USER ... SET RSA_PUBLIC_KEY` registers it. */
  publicKey?: string;
}

/**
 * A loopback server speaking the HTTP endpoints snowflake-sdk uses (login, query, session end,
 * telemetry), running each statement on a real Postgres database of its own. See
 * {@link startTestSnowflake} for what is and is not emulated.
 */
export interface TestSnowflake {
  /** `http://127.0.0.1:<port>`: the driver's `accessUrl`. */
  readonly url: string;
  /** The account name logins must give. */
  readonly account: string;
  /** The user created at start, and its password. */
  readonly username: string;
  readonly password: string;
  /** The Postgres database behind it, for a test's own setup and assertions. */
  readonly databaseUrl: string;
  /** Adds (or replaces) a user. */
  setUser(name: string, user: TestSnowflakeUser): void;
  /** Open sessions: logged in and not yet ended. */
  sessionCount(): number;
  /** Resolves once at most `count` sessions are open (a client's logout can finish after its call returned). */
  sessionsAtMost(count: number): Promise<void>;
  /** The SQL (as Postgres runs it) of the statements the sessions are running right now. */
  runningStatements(): Promise<string[]>;
  /**
   * Ends every open session on the server side, as an expired or revoked token does: the
   * clients' next statement is refused with 390112 and their token renewal with 390114, so a
   * client has to log in again.
   */
  expireSessions(): Promise<void>;
  /** Statements run so far. */
  statementCount(): number;
  /** Runs SQL directly on the Postgres database (Postgres dialect). */
  query<R extends Record<string, unknown> = Record<string, unknown>>(sql: string, values?: unknown[]): Promise<R[]>;
  /** Ends every session and stops listening. The database is left to the shared Postgres. */
  stop(): Promise<void>;
}

/** Options of {@link startTestSnowflake}. */
export interface TestSnowflakeOptions {
  /** Name of the Postgres database created for it (default `snowflake`). */
  database?: string;
  /** Account name (default `ferrytest`). */
  account?: string;
}

/** One logged-in session: a Postgres connection of its own, as a Snowflake session has its own state. */
interface Session {
  readonly client: pg.Client;
  /** Statements of one session run one after another, as on one connection. */
  queue: Promise<unknown>;
}

/** An error the server answers with, in Snowflake's codes. */
class SnowflakeFailure extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly sqlState?: string,
    readonly status = 200,
  ) {
    super(message);
  }
}

/**
 * Starts the emulator on 127.0.0.1 and a free port, over a fresh database of the shared test
 * Postgres. It covers what a loader and an incremental reader need:
 * - login by password, or by key pair (the RS256 JWT is verified against the user's public key:
 *   issuer, subject, fingerprint, signature, expiry); wrong credentials answer 390100 / 390144;
 * - statements with `?` binds, array binds (run as one statement over `unnest` when the array
 *   is bound to a `FROM VALUES (?, ...)`, otherwise once per row in a transaction), Snowflake's
 *   `FROM VALUES` list, VARIANT / TIMESTAMP_TZ / TIMESTAMP_NTZ / PARSE_JSON, and MERGE
 *   (Postgres runs the same syntax);
 * - results in the JSON format (every value a string; numbers, booleans, variants, dates,
 *   timestamps with their time zone, binary as hex), unquoted lower-case names upper-cased as
 *   Snowflake folds them, DML counts and statement types, errors with Snowflake codes and
 *   SQLSTATEs (002003 missing object, 000904 unknown column, 001003 syntax, 003001 privilege,
 *   100072 / 22000 for a refused row), and the cancel of a running statement (abort-request);
 * It does not cover: warehouses, roles and databases (accepted, not checked; the schema sets
 * the search path), stages, PUT/GET and stage-bound arrays, Arrow results, result chunks,
 * asynchronous queries, session renewal, and any SQL Postgres does not also accept.
 */
export async function startTestSnowflake(options: TestSnowflakeOptions = {}): Promise<TestSnowflake> {
  const databaseUrl = await (await getSharedTestPostgres()).createDatabase(options.database ?? 'snowflake');
  const admin = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  await admin.query(SNOWFLAKE_COMPAT_SQL);

  const account = (options.account ?? 'ferrytest').toUpperCase();
  const users = new Map<string, TestSnowflakeUser>();
  const sessions = new Map<string, Session>();
  /** Waiters of {@link TestSnowflake.sessionsAtMost}, checked whenever a session ends. */
  const waiters = new Set<{ count: number; resolve: () => void }>();
  const endSession = (token: string) => {
    sessions.delete(token);
    for (const waiter of waiters) {
      if (sessions.size <= waiter.count) {
        waiters.delete(waiter);
        waiter.resolve();
      }
    }
  };
  let statements = 0;
  const setUser = (name: string, user: TestSnowflakeUser) => users.set(name.toUpperCase(), { ...user });
  setUser('ferry', { password: 'ferry-test-password' });

  async function login(body: LoginBody, params: URLSearchParams): Promise<unknown> {
    const data = body.data ?? {};
    const name = String(data.LOGIN_NAME ?? '').toUpperCase();
    const user = users.get(name);
    if (String(data.ACCOUNT_NAME ?? '').toUpperCase() !== account || user === undefined) {
      throw new SnowflakeFailure('390100', 'Incorrect username or password was specified.');
    }
    if (String(data.AUTHENTICATOR ?? '').toUpperCase() === 'SNOWFLAKE_JWT') {
      if (user.publicKey === undefined || !validJwt(String(data.TOKEN ?? ''), user.publicKey, `${account}.${name}`)) {
        throw new SnowflakeFailure('390144', 'JWT token is invalid.');
      }
    } else if (user.password === undefined || data.PASSWORD !== user.password) {
      throw new SnowflakeFailure('390100', 'Incorrect username or password was specified.');
    }
    const client = new pg.Client({ connectionString: databaseUrl, types: { getTypeParser: () => (value: string) => value } });
    await client.connect();
    // Errors after connect (the server going away) must not crash the test process.
    client.on('error', () => undefined);
    await client.query("SET TimeZone = 'UTC'");
    const schema = params.get('schemaName');
    if (schema) await client.query(`SET search_path TO ${pg.escapeIdentifier(foldName(schema))}, public`);
    const token = randomUUID();
    sessions.set(token, { client, queue: Promise.resolve() });
    return {
      token,
      masterToken: randomUUID(),
      validityInSeconds: 3600,
      masterValidityInSeconds: 14400,
      sessionId: Math.floor(Math.random() * 1e12),
      parameters: SESSION_PARAMETERS,
      sessionInfo: { databaseName: params.get('databaseName'), schemaName: schema, warehouseName: params.get('warehouse'), roleName: params.get('roleName') },
    };
  }

  async function execute(session: Session, body: QueryBody): Promise<unknown> {
    statements++;
    const queryId = randomUUID();
    const binds = Object.entries(body.bindings ?? {})
      .sort(([a], [b]) => Number(a) - Number(b))
      .map(([, bind]) => bind.value);
    const numbered = numberPlaceholders(String(body.sqlText ?? ''));
    const arrayBound = binds.some((value) => Array.isArray(value));
    let result: pg.QueryResult<unknown[]>;
    try {
      if (!arrayBound) {
        const { text } = rewriteFromValues(numbered.text, false);
        result = await session.client.query({ text, values: binds, rowMode: 'array' });
      } else {
        result = await executeArrayBound(session.client, numbered.text, binds);
      }
    } catch (error) {
      throw asFailure(error);
    }
    return { ...answer(result), queryId };
  }

  const http = await listenLoopback((request, response) => {
    void handle(request, response).catch((error: unknown) => {
      const failure = error instanceof SnowflakeFailure ? error : new SnowflakeFailure('000603', 'Internal emulator error.');
      reply(response, failure.status, { success: false, code: failure.code, message: failure.message, data: { errorCode: failure.code, sqlState: failure.sqlState ?? null, queryId: randomUUID() } });
    });
  });

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://127.0.0.1');
    const body = await readJson(request);
    if (url.pathname === '/session/v1/login-request') {
      reply(response, 200, { success: true, data: await login(body as LoginBody, url.searchParams) });
      return;
    }
    if (url.pathname === '/telemetry/send' || url.pathname === '/session/heartbeat') {
      reply(response, 200, { success: true, data: null });
      return;
    }
    const token = /Snowflake Token="([^"]+)"/.exec(request.headers.authorization ?? '')?.[1];
    const session = token === undefined ? undefined : sessions.get(token);
    if (url.pathname === '/session/token-request') {
      // Renewal needs the master token of a live session; sessions here never outlive theirs.
      throw new SnowflakeFailure('390114', 'Authentication token has expired.  The user must authenticate again.');
    }
    if (url.pathname === '/session' && url.searchParams.get('delete') === 'true') {
      if (token !== undefined && session !== undefined) {
        endSession(token);
        await session.queue.catch(() => undefined);
        await session.client.end().catch(() => undefined);
      }
      reply(response, 200, { success: true, data: null });
      return;
    }
    if (url.pathname === '/queries/v1/abort-request') {
      // Cancels what the session is running, as Snowflake aborts the request's query.
      if (session !== undefined) await admin.query('SELECT pg_cancel_backend($1)', [(session.client as unknown as { processID: number }).processID]);
      reply(response, 200, { success: true, data: null });
      return;
    }
    if (url.pathname === '/queries/v1/query-request') {
      if (session === undefined) throw new SnowflakeFailure('390112', 'Your session has expired. Please login again.');
      const run = session.queue.then(() => execute(session, body as QueryBody));
      session.queue = run.catch(() => undefined);
      reply(response, 200, { success: true, data: await run });
      return;
    }
    throw new SnowflakeFailure('000404', `The emulator does not serve ${url.pathname}.`, undefined, 404);
  }

  return {
    url: http.url,
    account,
    username: 'ferry',
    password: 'ferry-test-password',
    databaseUrl,
    setUser,
    sessionCount: () => sessions.size,
    sessionsAtMost: (count) =>
      sessions.size <= count ? Promise.resolve() : new Promise<void>((resolve) => waiters.add({ count, resolve })),
    async runningStatements() {
      const pids = [...sessions.values()].map((s) => (s.client as unknown as { processID: number }).processID);
      const rows = await admin.query<{ query: string }>("SELECT query FROM pg_stat_activity WHERE state = 'active' AND pid = ANY($1::int[])", [pids]);
      return rows.rows.map((r) => r.query);
    },
    statementCount: () => statements,
    async expireSessions() {
      const open = [...sessions.entries()];
      for (const [token] of open) endSession(token);
      await Promise.all(open.map(async ([, s]) => {
        await s.queue.catch(() => undefined);
        await s.client.end().catch(() => undefined);
      }));
    },
    async query<R extends Record<string, unknown>>(sql: string, values: unknown[] = []) {
      return (await admin.query<R>(sql, values)).rows;
    },
    async stop() {
      await http.close();
      const open = [...sessions.values()];
      sessions.clear();
      await Promise.all(open.map((s) => s.client.end().catch(() => undefined)));
      await admin.end();
    },
  };
}

interface LoginBody {
  data?: { ACCOUNT_NAME?: unknown; LOGIN_NAME?: unknown; PASSWORD?: unknown; AUTHENTICATOR?: unknown; TOKEN?: unknown };
}

interface QueryBody {
  sqlText?: unknown;
  bindings?: Record<string, { type: string; value: BindValue }>;
}

/** Session parameters a real account reports at login; the driver formats results by them. */
const SESSION_PARAMETERS = [
  { name: 'TIMEZONE', value: 'UTC' },
  { name: 'TIMESTAMP_OUTPUT_FORMAT', value: 'YYYY-MM-DD HH24:MI:SS.FF3 TZHTZM' },
  { name: 'TIMESTAMP_NTZ_OUTPUT_FORMAT', value: 'YYYY-MM-DD HH24:MI:SS.FF3' },
  { name: 'TIMESTAMP_LTZ_OUTPUT_FORMAT', value: '' },
  { name: 'TIMESTAMP_TZ_OUTPUT_FORMAT', value: '' },
  { name: 'DATE_OUTPUT_FORMAT', value: 'YYYY-MM-DD' },
  { name: 'TIME_OUTPUT_FORMAT', value: 'HH24:MI:SS' },
  { name: 'BINARY_OUTPUT_FORMAT', value: 'HEX' },
  { name: 'CLIENT_RESULT_PREFETCH_THREADS', value: 1 },
];

/**
 * An array-bound statement: one statement over `unnest` when the arrays feed a `FROM VALUES
 * (?, ...)`, otherwise the statement once per row, all in one transaction so a refused row
 * leaves nothing behind (Snowflake's array insert is one statement too).
 */
async function executeArrayBound(client: pg.Client, sql: string, binds: BindValue[]): Promise<pg.QueryResult<unknown[]>> {
  const rows = binds.reduce<number>((most, value) => Math.max(most, Array.isArray(value) ? value.length : 1), 0);
  const columns = binds.map((value) => (Array.isArray(value) ? value : new Array<string | null>(rows).fill(value)));
  const unnested = rewriteFromValues(sql, true);
  if (unnested.rewritten) return client.query({ text: unnested.text, values: columns, rowMode: 'array' });
  await client.query('BEGIN');
  try {
    let last: pg.QueryResult<unknown[]> | undefined;
    let count = 0;
    const name = `ferry_${randomUUID().replace(/-/g, '')}`;
    for (let row = 0; row < rows; row++) {
      last = await client.query({ name, text: sql, values: columns.map((column) => column[row] ?? null), rowMode: 'array' });
      count += last.rowCount ?? 0;
    }
    await client.query('COMMIT');
    if (last === undefined) throw new SnowflakeFailure('002049', 'An array bind needs at least one row.', '22000');
    return { ...last, rowCount: count };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}

/** Statement type ids the driver knows (statement_type.js) and the count column of each DML. */
const DML: Record<string, { id: number; columns: string[] }> = {
  INSERT: { id: 0x3100, columns: ['number of rows inserted'] },
  UPDATE: { id: 0x3200, columns: ['number of rows updated', 'number of multi-joined rows updated'] },
  DELETE: { id: 0x3300, columns: ['number of rows deleted'] },
  MERGE: { id: 0x3400, columns: ['number of rows inserted', 'number of rows updated'] },
};

/** A Postgres result as the `data` of a Snowflake query answer. */
function answer(result: pg.QueryResult<unknown[]>): Record<string, unknown> {
  const base = { version: 1, queryResultFormat: 'json', parameters: SESSION_PARAMETERS, total: 0, returned: 0 };
  const command = (result.command ?? '').toUpperCase();
  const dml = DML[command];
  if (dml !== undefined) {
    const rowset = [dml.columns.map((_, i) => (i === 0 ? String(result.rowCount ?? 0) : '0'))];
    return { ...base, statementTypeId: dml.id, rowtype: dml.columns.map((name) => column(name, 'fixed', 0)), rowset, total: 1, returned: 1 };
  }
  if (command === 'SELECT' || result.fields.length > 0) {
    const converters = result.fields.map((f) => converterFor(f.dataTypeID, f.dataTypeModifier));
    const rowtype = result.fields.map((f, i) => column(foldResultName(f.name), converters[i]!.type, converters[i]!.scale));
    const rowset = result.rows.map((row) => row.map((value, i) => (value === null ? null : converters[i]!.convert(String(value)))));
    return { ...base, statementTypeId: 0x1000, rowtype, rowset, total: rowset.length, returned: rowset.length };
  }
  // DDL, transactions, SET: one status row, as Snowflake answers them.
  return { ...base, statementTypeId: 0x6000, rowtype: [column('status', 'text', 0)], rowset: [['Statement executed successfully.']], total: 1, returned: 1 };
}

function column(name: string, type: string, scale: number): Record<string, unknown> {
  return { name, type, scale, precision: type === 'fixed' ? 38 : 0, nullable: true, length: null, byteLength: null, database: '', schema: '', table: '' };
}

/** How a Postgres type's text becomes a Snowflake JSON-format value. */
interface Converter {
  type: string;
  scale: number;
  convert(text: string): string;
}

const asIs = (text: string) => text;
const TEXT: Converter = { type: 'text', scale: 0, convert: asIs };

function converterFor(oid: number, modifier: number): Converter {
  switch (oid) {
    case 16:
      return { type: 'boolean', scale: 0, convert: (t) => (t === 't' || t === 'true' ? '1' : '0') };
    case 20:
    case 21:
    case 23:
    case 26:
      return { type: 'fixed', scale: 0, convert: asIs };
    case 1700:
      // numeric(p, s) keeps its scale; an unconstrained numeric reads as NUMBER(38, 9).
      return { type: 'fixed', scale: modifier >= 4 ? (modifier - 4) & 0xffff : 9, convert: asIs };
    case 700:
    case 701:
      return { type: 'real', scale: 0, convert: asIs };
    case 114:
    case 3802:
      return { type: 'variant', scale: 0, convert: asIs };
    case 1082:
      return { type: 'date', scale: 0, convert: (t) => String(Math.round(Date.parse(`${t}T00:00:00Z`) / 86_400_000)) };
    case 1114:
      return { type: 'timestamp_ntz', scale: 9, convert: (t) => epochText(`${t}Z`) };
    case 1184:
      return { type: 'timestamp_tz', scale: 9, convert: (t) => `${epochText(t)} 1440` };
    case 17:
      return { type: 'binary', scale: 0, convert: (t) => t.replace(/^\\x/, '').toUpperCase() };
    default:
      return TEXT;
  }
}

/**
 * A timestamp's text (`2026-01-01 10:00:00.123456+00`, in UTC as every session runs) as epoch
 * seconds with nine fraction digits, the JSON format's timestamp, keeping the microseconds a
 * Date would drop.
 */
function epochText(text: string): string {
  const match = /^(\d{4,}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d)(?:\.(\d+))?(.*)$/.exec(text);
  if (match === null) return text;
  const zone = match[4] === '' || match[4] === 'Z' ? 'Z' : match[4]!.length === 3 ? `${match[4]}:00` : match[4]!;
  const seconds = Math.floor(Date.parse(`${match[1]}T${match[2]}${zone}`) / 1000);
  return `${seconds}.${(match[3] ?? '').padEnd(9, '0').slice(0, 9)}`;
}

/** Snowflake folds unquoted names to upper case, Postgres to lower: a name with no capital reads as Snowflake's. */
function foldResultName(name: string): string {
  return name === name.toLowerCase() ? name.toUpperCase() : name;
}

/** A schema name from the login as Postgres stored it: unquoted names fold to lower case. */
function foldName(name: string): string {
  return name.startsWith('"') ? name.slice(1, -1) : name.toLowerCase();
}

/** A Postgres error as a Snowflake failure (code and SQLSTATE as Snowflake reports the same case). */
function asFailure(error: unknown): SnowflakeFailure {
  if (error instanceof SnowflakeFailure) return error;
  const e = error as { code?: string; message?: string };
  const state = e.code ?? '';
  const message = e.message ?? 'Statement failed.';
  if (state === '42P01' || state === '3F000') return new SnowflakeFailure('002003', `SQL compilation error:\n${message}: does not exist or not authorized.`, '42S02');
  if (state === '42703') return new SnowflakeFailure('000904', `SQL compilation error: ${message}`, '42000');
  if (state === '42601') return new SnowflakeFailure('001003', `SQL compilation error:\n${message}`, '42000');
  if (state === '42501') return new SnowflakeFailure('003001', `SQL access control error:\n${message}`, '42501');
  if (state.startsWith('22')) return new SnowflakeFailure('100038', message, '22018');
  if (state.startsWith('23')) return new SnowflakeFailure('100072', message, '22000');
  if (state === '57014') return new SnowflakeFailure('000604', 'SQL execution canceled', '57014');
  // A bind count that does not match the placeholders: a compilation error, never an outage.
  if (state === '08P01') return new SnowflakeFailure('002049', `SQL compilation error: ${message}`, '42601');
  return new SnowflakeFailure('002140', `SQL compilation error:\n${message}`, state === '' ? '42000' : state);
}

/** Verifies a key-pair login's JWT: RS256, issuer and subject naming the user and key, not expired. */
function validJwt(token: string, publicKeyPem: string, subject: string): boolean {
  const parts = token.split('.');
  if (parts.length !== 3) return false;
  try {
    const header = JSON.parse(Buffer.from(parts[0]!, 'base64url').toString()) as { alg?: string };
    const claims = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString()) as { iss?: string; sub?: string; exp?: number };
    const key: KeyObject = createPublicKey(publicKeyPem);
    const fingerprint = `SHA256:${createHash('sha256').update(key.export({ format: 'der', type: 'spki' })).digest('base64')}`;
    if (header.alg !== 'RS256' || claims.sub !== subject || claims.iss !== `${subject}.${fingerprint}`) return false;
    // The driver writes exp in milliseconds; a standard JWT in seconds. Either must be ahead.
    const exp = typeof claims.exp === 'number' ? (claims.exp > 1e12 ? claims.exp : claims.exp * 1000) : 0;
    // The driver signs with the machine's real time, so the expiry is checked against it too.
    // eslint-disable-next-line no-restricted-properties
    if (exp <= Date.now()) return false;
    return verify('RSA-SHA256', Buffer.from(`${parts[0]}.${parts[1]}`), key, Buffer.from(parts[2]!, 'base64url'));
  } catch {
    return false;
  }
}

async function readJson(request: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  let raw = Buffer.concat(chunks);
  if (raw.length === 0) return {};
  if (request.headers['content-encoding'] === 'gzip') raw = gunzipSync(raw);
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    throw new SnowflakeFailure('390400', 'The request body is not JSON.', undefined, 400);
  }
}

function reply(response: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  response.end(text);
}

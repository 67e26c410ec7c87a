import { existsSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { parseApiKey } from '@ferry/core/internal';

/** Where the server keeps its state. */
export type DatabaseSetting = { kind: 'sqlite'; filename: string } | { kind: 'postgres'; connectionString: string };

/**
 * What a `ferry serve` process does. `all`: the API and the work (pipelines, schedules, replays,
 * webhook deliveries). `api`: the API only; `worker`: the work only, with `/healthz` and
 * `/metrics` on its port. Several processes on one Postgres (or one SQLite file) split the load:
 * API processes scale with requests, workers with pipelines, and neither starves the other.
 */
export type ServerRole = 'all' | 'api' | 'worker';

const ROLES: readonly ServerRole[] = ['all', 'api', 'worker'];

/** Everything `ferry serve` (and the other commands' storage) is configured by: docs/operations.md lists each setting. */
export interface ServerSettings {
  /** What this process does (default `all`). */
  role: ServerRole;
  port: number;
  host: string;
  database: DatabaseSetting;
  /** Key-encryption key; for SQLite files generated and kept beside the database when absent. */
  secretKey: string | undefined;
  /** Ensured on start: workspace `default`, scope `write`. */
  bootstrapApiKey: string | undefined;
  /** Hosts or CIDRs reachable over plain http and despite being private or loopback. */
  outboundAllow: string[];
  logLevel: string;
  /** Requests per API key (or per client address before authentication) in a window; `false` turns it off; undefined keeps the API's default (600 per 60 s). A key's own limit wins. */
  rateLimit?: RateLimit | false;
  /** Days after which delivered events, finished runs and deliveries, and fanned-out platform events are deleted; undefined keeps them. */
  retentionDays?: number;
  /** Requests per webhook source connector on its ingest endpoint; `false` turns it off; undefined keeps the default (6000 per 60 s). */
  ingestRateLimit?: RateLimit | false;
  /** Worker processes started beside this one (0 to 64, default 0): pipelines then use more cores. */
  workers: number;
  /**
   * This process's engine id as a lease holder; undefined for a random one. A process started
   * again with the id of one that exited takes its leases back at once. `--workers` gives each
   * worker `<this id>-worker-<n>`.
   */
  instanceId?: string;
  /** Whether an API process serves the Ferry Console at `/console` (default true; `--console off`). */
  console: boolean;
}

/**
 * The defaults of the settings, where parsing applies them and where `ferry --help` reads them,
 * so the help cannot drift from what the server does.
 */
export const SETTING_DEFAULTS = {
  role: 'all',
  port: 8080,
  host: '127.0.0.1',
  /** A SQLite file in the working folder; `migrate` and `keys` use it too. */
  database: './ferry.db',
  logLevel: 'info',
  workers: 0,
  console: 'on',
} as const;

/**
 * The rate limits the API applies when neither a flag nor a variable sets one. They are the HTTP
 * layer's own defaults (`@ferry/http`), which it does not export: spelled here for `--help`, and
 * checked against the `RateLimit-Policy` a server answers by this package's tests.
 */
export const API_RATE_LIMIT_DEFAULTS = { api: '600/60', ingest: '6000/60' } as const;

/** What an instance id may be spelled with: it names leases and appears in logs. */
const INSTANCE_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$/;

/** The most worker processes `--workers` starts. */
export const MAX_WORKERS = 64;

/** A rate limit: `requests` per `perSeconds`. */
export interface RateLimit {
  requests: number;
  perSeconds: number;
}

/** The log levels `--log-level` and `FERRY_LOG_LEVEL` accept (pino's, and `silent`). */
export const LOG_LEVELS: readonly string[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** A setting that cannot be used; the CLI prints the message and exits with status 2. */
export class SettingsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SettingsError';
  }
}

/**
 * Reads `DATABASE_URL` (or `--database`): `postgres://...` for Postgres, anything else a SQLite
 * file, whose folder must exist (the file is created in it). `name` is the setting named in an
 * error: the flag when it was given, else the variable.
 */
export function parseDatabase(value: string | undefined, name = 'DATABASE_URL'): DatabaseSetting {
  const text = value === undefined || value.trim() === '' ? SETTING_DEFAULTS.database : value.trim();
  if (/^postgres(ql)?:\/\//i.test(text)) return { kind: 'postgres', connectionString: text };
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) throw new SettingsError(`Unsupported database URL scheme in ${JSON.stringify(text.split('://')[0])}: use postgres:// or a SQLite file path.`);
  const filename = text.replace(/^sqlite:/i, '');
  if (filename !== ':memory:') {
    const folder = dirname(resolve(filename));
    if (!existsSync(folder) || !statSync(folder).isDirectory()) {
      throw new SettingsError(`${name} names the SQLite file ${JSON.stringify(filename)}, but its folder ${JSON.stringify(folder)} does not exist: create it, or give another path.`);
    }
  }
  return { kind: 'sqlite', filename };
}

/**
 * Reads a rate limit spelled `<requests>/<seconds>` (`600/60`), or `off`; `name` is the setting
 * named in the error.
 */
export function parseRateLimit(value: string, name: string): RateLimit | false {
  const text = value.trim().toLowerCase();
  if (text === 'off') return false;
  const match = /^(\d{1,9})\/(\d{1,7})$/.exec(text);
  const requests = Number(match?.[1]);
  const perSeconds = Number(match?.[2]);
  if (!match || requests < 1 || perSeconds < 1 || perSeconds > 86_400) {
    throw new SettingsError(`${name} must be <requests>/<seconds> (such as 600/60, seconds 1 to 86400) or off, not ${JSON.stringify(value.slice(0, 40))}.`);
  }
  return { requests, perSeconds };
}

/** The settings of `ferry serve`: flags win over environment variables, which win over defaults. */
export function parseServeSettings(args: readonly string[], env: NodeJS.ProcessEnv): ServerSettings {
  const { values } = parseArgs({
    args: [...args],
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      database: { type: 'string' },
      'outbound-allow': { type: 'string' },
      'log-level': { type: 'string' },
      'rate-limit': { type: 'string' },
      'ingest-rate-limit': { type: 'string' },
      role: { type: 'string' },
      'retention-days': { type: 'string' },
      workers: { type: 'string' },
      'instance-id': { type: 'string' },
      console: { type: 'string' },
    },
    strict: true,
    allowPositionals: false,
  });
  const portText = values.port ?? env.FERRY_PORT ?? String(SETTING_DEFAULTS.port);
  if (!/^\d{1,5}$/.test(portText) || Number(portText) > 65535) throw new SettingsError(`The port must be 0 to 65535, not ${JSON.stringify(portText)}.`);
  const logLevel = (values['log-level'] ?? env.FERRY_LOG_LEVEL ?? SETTING_DEFAULTS.logLevel).toLowerCase();
  if (!LOG_LEVELS.includes(logLevel)) throw new SettingsError(`The log level must be one of ${LOG_LEVELS.join(', ')}.`);
  const role = (values.role ?? nonEmpty(env.FERRY_ROLE) ?? SETTING_DEFAULTS.role).toLowerCase();
  if (!(ROLES as readonly string[]).includes(role)) throw new SettingsError(`The role must be one of ${ROLES.join(', ')}, not ${JSON.stringify(role.slice(0, 40))}.`);
  const retention = nonEmpty(values['retention-days'] ?? env.FERRY_RETENTION_DAYS);
  if (retention !== undefined && !(/^\d{1,5}$/.test(retention) && Number(retention) >= 1)) {
    throw new SettingsError(`The retention must be a number of days from 1 to 99999, not ${JSON.stringify(retention.slice(0, 40))}.`);
  }
  const workers = nonEmpty(values.workers ?? env.FERRY_WORKERS) ?? String(SETTING_DEFAULTS.workers);
  if (!/^\d{1,2}$/.test(workers) || Number(workers) > MAX_WORKERS) {
    throw new SettingsError(`${values.workers !== undefined ? '--workers' : 'FERRY_WORKERS'} must be a number of worker processes from 0 to ${MAX_WORKERS}, not ${JSON.stringify(workers.slice(0, 40))}.`);
  }
  const instanceId = nonEmpty(values['instance-id'] ?? env.FERRY_INSTANCE_ID);
  // Workers' ids add `-worker-<n>` to this one, and must fit too.
  const maxIdLength = Number(workers) > 0 ? 100 - `-worker-${MAX_WORKERS}`.length : 100;
  if (instanceId !== undefined && !(INSTANCE_ID.test(instanceId) && instanceId.length <= maxIdLength)) {
    throw new SettingsError(
      `${values['instance-id'] !== undefined ? '--instance-id' : 'FERRY_INSTANCE_ID'} must be 1 to ${maxIdLength} letters, digits, '.', '_', ':' or '-', starting with a letter or digit, not ${JSON.stringify(instanceId.slice(0, 40))}.`,
    );
  }
  const consoleSetting = (nonEmpty(values.console ?? env.FERRY_CONSOLE) ?? SETTING_DEFAULTS.console).toLowerCase();
  if (consoleSetting !== 'on' && consoleSetting !== 'off') {
    throw new SettingsError(`${values.console !== undefined ? '--console' : 'FERRY_CONSOLE'} must be on or off, not ${JSON.stringify(consoleSetting.slice(0, 40))}.`);
  }
  const rateLimit = nonEmpty(values['rate-limit'] ?? env.FERRY_RATE_LIMIT);
  const ingestRateLimit = nonEmpty(values['ingest-rate-limit'] ?? env.FERRY_INGEST_RATE_LIMIT);
  return {
    role: role as ServerRole,
    port: Number(portText),
    host: values.host ?? env.FERRY_HOST ?? SETTING_DEFAULTS.host,
    database: parseDatabase(values.database ?? env.DATABASE_URL, values.database !== undefined ? '--database' : 'DATABASE_URL'),
    secretKey: nonEmpty(env.FERRY_SECRET_KEY),
    bootstrapApiKey: parseBootstrapKey(nonEmpty(env.FERRY_BOOTSTRAP_API_KEY)),
    outboundAllow: (values['outbound-allow'] ?? env.FERRY_OUTBOUND_ALLOW ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s.length > 0),
    logLevel,
    workers: Number(workers),
    console: consoleSetting === 'on',
    ...(retention === undefined ? {} : { retentionDays: Number(retention) }),
    ...(instanceId === undefined ? {} : { instanceId }),
    ...(rateLimit === undefined ? {} : { rateLimit: parseRateLimit(rateLimit, values['rate-limit'] !== undefined ? '--rate-limit' : 'FERRY_RATE_LIMIT') }),
    ...(ingestRateLimit === undefined ? {} : { ingestRateLimit: parseRateLimit(ingestRateLimit, values['ingest-rate-limit'] !== undefined ? '--ingest-rate-limit' : 'FERRY_INGEST_RATE_LIMIT') }),
  };
}

/** `FERRY_BOOTSTRAP_API_KEY` must be a key `ferry keys create` could have printed; the key itself is never echoed. */
function parseBootstrapKey(key: string | undefined): string | undefined {
  if (key !== undefined && parseApiKey(key) === null) {
    throw new SettingsError('FERRY_BOOTSTRAP_API_KEY is not a well-formed API key (its format or checksum is wrong). `ferry keys create --database <a scratch file>` prints one.');
  }
  return key;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

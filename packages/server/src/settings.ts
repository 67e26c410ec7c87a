import { parseArgs } from 'node:util';

/** Where the server keeps its state. */
export type DatabaseSetting = { kind: 'sqlite'; filename: string } | { kind: 'postgres'; connectionString: string };

/** Everything `ferry serve` (and the other commands' storage) is configured by (contract section 12). */
export interface ServerSettings {
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
}

/** A setting that cannot be used; the CLI prints the message and exits with status 2. */
export class SettingsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SettingsError';
  }
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** Reads `DATABASE_URL` (or `--database`): `postgres://...` for Postgres, anything else a SQLite file. */
export function parseDatabase(value: string | undefined): DatabaseSetting {
  const text = value === undefined || value.trim() === '' ? './ferry.db' : value.trim();
  if (/^postgres(ql)?:\/\//i.test(text)) return { kind: 'postgres', connectionString: text };
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) throw new SettingsError(`Unsupported database URL scheme in ${JSON.stringify(text.split('://')[0])}: use postgres:// or a SQLite file path.`);
  return { kind: 'sqlite', filename: text.replace(/^sqlite:/i, '') };
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
    },
    strict: true,
    allowPositionals: false,
  });
  const portText = values.port ?? env.FERRY_PORT ?? '8080';
  if (!/^\d{1,5}$/.test(portText) || Number(portText) > 65535) throw new SettingsError(`The port must be 0 to 65535, not ${JSON.stringify(portText)}.`);
  const logLevel = (values['log-level'] ?? env.FERRY_LOG_LEVEL ?? 'info').toLowerCase();
  if (!LOG_LEVELS.includes(logLevel)) throw new SettingsError(`The log level must be one of ${LOG_LEVELS.join(', ')}.`);
  return {
    port: Number(portText),
    host: values.host ?? env.FERRY_HOST ?? '127.0.0.1',
    database: parseDatabase(values.database ?? env.DATABASE_URL),
    secretKey: nonEmpty(env.FERRY_SECRET_KEY),
    bootstrapApiKey: nonEmpty(env.FERRY_BOOTSTRAP_API_KEY),
    outboundAllow: (values['outbound-allow'] ?? env.FERRY_OUTBOUND_ALLOW ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s.length > 0),
    logLevel,
  };
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

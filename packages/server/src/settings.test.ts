import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { generateApiKey } from '@ferry/core/internal';
import { parseDatabase, parseServeSettings, SETTING_DEFAULTS, SettingsError } from './settings.js';

describe('server settings', () => {
  it('defaults to SQLite in ./ferry.db on 127.0.0.1:8080, every limit at its default', () => {
    expect(parseServeSettings([], {})).toEqual({
      role: 'all',
      port: 8080,
      host: '127.0.0.1',
      database: { kind: 'sqlite', filename: './ferry.db' },
      secretKey: undefined,
      bootstrapApiKey: undefined,
      outboundAllow: [],
      logLevel: 'info',
      workers: 0,
      console: true,
    });
  });

  it('applies the defaults it gives `ferry --help` to show', () => {
    const settings = parseServeSettings([], {});
    expect({ ...settings, console: settings.console ? 'on' : 'off', database: settings.database.kind === 'sqlite' ? settings.database.filename : '' }).toMatchObject(SETTING_DEFAULTS);
    expect(parseDatabase(undefined)).toEqual({ kind: 'sqlite', filename: SETTING_DEFAULTS.database });
  });

  it('serves the console unless --console or FERRY_CONSOLE says off', () => {
    expect(parseServeSettings([], { FERRY_CONSOLE: 'OFF' }).console).toBe(false);
    expect(parseServeSettings(['--console', 'on'], { FERRY_CONSOLE: 'off' }).console).toBe(true);
    expect(() => parseServeSettings(['--console=no'], {})).toThrow(/--console must be on or off, not "no"/);
    expect(() => parseServeSettings([], { FERRY_CONSOLE: '1' })).toThrow(/FERRY_CONSOLE must be on or off/);
  });

  it('reads the instance id from FERRY_INSTANCE_ID or --instance-id, short enough for its workers\u2019 ids', () => {
    expect(parseServeSettings([], {}).instanceId).toBeUndefined();
    expect(parseServeSettings([], { FERRY_INSTANCE_ID: 'api-1' }).instanceId).toBe('api-1');
    expect(parseServeSettings(['--instance-id', 'node-7.worker:2'], { FERRY_INSTANCE_ID: 'api-1' }).instanceId).toBe('node-7.worker:2');
    for (const bad of ['-a', 'a b', 'a/b', 'x'.repeat(101)]) expect(() => parseServeSettings([`--instance-id=${bad}`], {})).toThrow(/--instance-id must be 1 to 100 letters/);
    expect(parseServeSettings([], { FERRY_INSTANCE_ID: 'x'.repeat(90) }).instanceId).toHaveLength(90);
    expect(parseServeSettings(['--workers', '2'], { FERRY_INSTANCE_ID: 'x'.repeat(90) }).instanceId).toHaveLength(90);
    expect(() => parseServeSettings(['--workers', '2'], { FERRY_INSTANCE_ID: 'x'.repeat(91) })).toThrow(/FERRY_INSTANCE_ID must be 1 to 90 letters/);
  });

  it('reads the number of worker processes from FERRY_WORKERS or --workers, 0 to 64', () => {
    expect(parseServeSettings([], { FERRY_WORKERS: '3' }).workers).toBe(3);
    expect(parseServeSettings(['--workers', '2'], { FERRY_WORKERS: '3' }).workers).toBe(2);
    for (const bad of ['-1', '65', 'two', '1.5', '100']) expect(() => parseServeSettings([`--workers=${bad}`], {})).toThrow(/--workers must be a number of worker processes from 0 to 64/);
    expect(() => parseServeSettings([], { FERRY_WORKERS: 'all' })).toThrow(/FERRY_WORKERS must be/);
  });

  it('reads the environment, and flags win over it', () => {
    const env = { FERRY_PORT: '9000', FERRY_HOST: '0.0.0.0', DATABASE_URL: 'postgres://u:p@h/db', FERRY_OUTBOUND_ALLOW: 'localhost, 10.0.0.0/8', FERRY_LOG_LEVEL: 'DEBUG', FERRY_SECRET_KEY: ' k ' };
    const fromEnv = parseServeSettings([], env);
    expect(fromEnv).toMatchObject({ port: 9000, host: '0.0.0.0', database: { kind: 'postgres', connectionString: 'postgres://u:p@h/db' }, outboundAllow: ['localhost', '10.0.0.0/8'], logLevel: 'debug', secretKey: 'k' });
    const file = join(tmpdir(), 'x.db');
    const flags = parseServeSettings(['--port', '0', '--database', file, '--outbound-allow', '127.0.0.1', '--log-level', 'warn'], env);
    expect(flags).toMatchObject({ port: 0, database: { kind: 'sqlite', filename: file }, outboundAllow: ['127.0.0.1'], logLevel: 'warn' });
  });

  it('reads the API and ingest rate limits, from the environment or flags, or turns them off', () => {
    expect(parseServeSettings([], {})).not.toHaveProperty('rateLimit');
    const env = { FERRY_RATE_LIMIT: '1200/60', FERRY_INGEST_RATE_LIMIT: 'off' };
    expect(parseServeSettings([], env)).toMatchObject({ rateLimit: { requests: 1200, perSeconds: 60 }, ingestRateLimit: false });
    expect(parseServeSettings(['--rate-limit', 'OFF', '--ingest-rate-limit', '50000/1'], env)).toMatchObject({ rateLimit: false, ingestRateLimit: { requests: 50_000, perSeconds: 1 } });
    for (const bad of ['600', '0/60', '600/0', '10/90000', 'many/60', '-1/60']) {
      expect(() => parseServeSettings([`--rate-limit=${bad}`], {})).toThrow(/--rate-limit must be <requests>\/<seconds>/);
    }
    expect(() => parseServeSettings([], { FERRY_INGEST_RATE_LIMIT: 'lots' })).toThrow(/FERRY_INGEST_RATE_LIMIT must be/);
  });

  it('reads the role: all by default, api or worker from FERRY_ROLE or --role', () => {
    expect(parseServeSettings([], { FERRY_ROLE: 'API' }).role).toBe('api');
    expect(parseServeSettings(['--role', 'worker'], { FERRY_ROLE: 'api' }).role).toBe('worker');
    expect(() => parseServeSettings(['--role', 'scheduler'], {})).toThrow(/role must be one of all, api, worker/);
  });

  it('reads the retention in days, and refuses one that is not a whole number of days', () => {
    expect(parseServeSettings([], {})).not.toHaveProperty('retentionDays');
    expect(parseServeSettings([], { FERRY_RETENTION_DAYS: '30' }).retentionDays).toBe(30);
    expect(parseServeSettings(['--retention-days', '7'], { FERRY_RETENTION_DAYS: '30' }).retentionDays).toBe(7);
    for (const bad of ['0', '1.5', 'forever', '100000']) expect(() => parseServeSettings([], { FERRY_RETENTION_DAYS: bad })).toThrow(/retention must be a number of days/);
  });

  it('refuses what it cannot use, clearly', () => {
    expect(() => parseServeSettings(['--port', '70000'], {})).toThrow(SettingsError);
    expect(() => parseServeSettings([], { FERRY_PORT: 'eighty' })).toThrow(/port/);
    expect(() => parseServeSettings([], { FERRY_LOG_LEVEL: 'loud' })).toThrow(/log level/);
    expect(() => parseServeSettings(['--verbose'], {})).toThrow();
    expect(() => parseDatabase('mysql://x')).toThrow(/postgres/);
    expect(parseDatabase('postgresql://h/db')).toEqual({ kind: 'postgres', connectionString: 'postgresql://h/db' });
    expect(parseDatabase('sqlite:/tmp/a.db')).toEqual({ kind: 'sqlite', filename: '/tmp/a.db' });
  });

  it('names the setting whose SQLite folder is missing', () => {
    expect(() => parseServeSettings(['--database', '/nonexistent-ferry/dir/f.db'], {})).toThrow(/--database names the SQLite file "\/nonexistent-ferry\/dir\/f.db", but its folder "\/nonexistent-ferry\/dir" does not exist/);
    expect(() => parseServeSettings([], { DATABASE_URL: 'sqlite:/nonexistent-ferry/f.db' })).toThrow(/^DATABASE_URL names the SQLite file/);
    expect(parseDatabase(':memory:')).toEqual({ kind: 'sqlite', filename: ':memory:' });
  });

  it('refuses a malformed FERRY_BOOTSTRAP_API_KEY by its name, without echoing it', () => {
    const good = generateApiKey().token;
    expect(parseServeSettings([], { FERRY_BOOTSTRAP_API_KEY: good }).bootstrapApiKey).toBe(good);
    for (const bad of ['hunter2-not-a-key', good.slice(0, -1) + (good.endsWith('a') ? 'b' : 'a')]) {
      let message = '';
      try {
        parseServeSettings([], { FERRY_BOOTSTRAP_API_KEY: bad });
      } catch (error) {
        expect(error).toBeInstanceOf(SettingsError);
        message = (error as Error).message;
      }
      expect(message).toMatch(/^FERRY_BOOTSTRAP_API_KEY is not a well-formed API key/);
      expect(message).not.toContain(bad);
    }
  });
});

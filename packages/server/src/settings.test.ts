import { describe, expect, it } from 'vitest';
import { parseDatabase, parseServeSettings, SettingsError } from './settings.js';

describe('server settings', () => {
  it('defaults as contract section 12 says', () => {
    expect(parseServeSettings([], {})).toEqual({
      port: 8080,
      host: '127.0.0.1',
      database: { kind: 'sqlite', filename: './ferry.db' },
      secretKey: undefined,
      bootstrapApiKey: undefined,
      outboundAllow: [],
      logLevel: 'info',
    });
  });

  it('reads the environment, and flags win over it', () => {
    const env = { FERRY_PORT: '9000', FERRY_HOST: '0.0.0.0', DATABASE_URL: 'postgres://u:p@h/db', FERRY_OUTBOUND_ALLOW: 'localhost, 10.0.0.0/8', FERRY_LOG_LEVEL: 'DEBUG', FERRY_SECRET_KEY: ' k ' };
    const fromEnv = parseServeSettings([], env);
    expect(fromEnv).toMatchObject({ port: 9000, host: '0.0.0.0', database: { kind: 'postgres', connectionString: 'postgres://u:p@h/db' }, outboundAllow: ['localhost', '10.0.0.0/8'], logLevel: 'debug', secretKey: 'k' });
    const flags = parseServeSettings(['--port', '0', '--database', 'data/x.db', '--outbound-allow', '127.0.0.1', '--log-level', 'warn'], env);
    expect(flags).toMatchObject({ port: 0, database: { kind: 'sqlite', filename: 'data/x.db' }, outboundAllow: ['127.0.0.1'], logLevel: 'warn' });
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
});

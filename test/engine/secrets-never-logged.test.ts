import { Type } from '@sinclair/typebox';
import { expect, it } from 'vitest';
import { ConnectorError, createEngine, defineConnector, generateSecretKey, isFerryError, postgresStorage, Secret, sqliteStorage, type Logger } from '@ferry/core';
import { getSharedTestPostgres } from '@ferry/test-servers';

const SECRET = 'sk_live_never-show-me-4242';

/** A logger that keeps every line, bindings included, as text. */
function capture(lines: string[], bindings: Record<string, unknown> = {}): Logger {
  const log = (level: string) => (obj: object | string, msg?: string) => {
    lines.push(JSON.stringify({ level, ...bindings, ...(typeof obj === 'string' ? { msg: obj } : { ...obj, msg }) }, (_k, v: unknown) => (v instanceof Error ? { message: v.message, stack: v.stack } : v)));
  };
  return { trace: log('trace'), debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error'), fatal: log('fatal'), child: (b) => capture(lines, { ...bindings, ...b }) };
}

const leaky = defineConnector({
  type: 'leaky',
  version: '1.0.0',
  directions: ['source'],
  configSchema: Type.Object({ host: Type.String(), api_key: Secret(Type.String()) }),
  // A careless plugin that puts the credential in its error message.
  check: async (ctx) => {
    throw new ConnectorError('auth_failed', `login with ${ctx.config.api_key} refused`, { retryable: false });
  },
});

it('a secret never reaches a log line, a platform event, an error or a response', async () => {
  const lines: string[] = [];
  const pg = await getSharedTestPostgres();
  const url = new URL(await pg.createDatabase('logs'));
  for (const storage of [sqliteStorage({ filename: ':memory:' }), postgresStorage({ connectionString: url.toString() })]) {
    const engine = await createEngine({ storage, secretKey: generateSecretKey(), logger: capture(lines), plugins: [leaky] });
    const seen: unknown[] = [];
    engine.on('*', (e) => seen.push(e));
    await engine.start();
    const created = await engine.connectors.create('default', { type: 'leaky', direction: 'source', config: { host: 'api.example.com', api_key: SECRET } });
    seen.push(created, await engine.connectors.get('default', created.id), await engine.connectors.list('default'));
    seen.push(await engine.connectors.check('default', created.id));
    seen.push(await engine.connectors.update('default', created.id, { config: { api_key: `${SECRET}-2` } }));
    try {
      await engine.connectors.create('default', { type: 'leaky', direction: 'source', config: { host: 1, api_key: SECRET } as never });
    } catch (error) {
      expect(isFerryError(error, 'validation_failed')).toBe(true);
      seen.push({ message: (error as Error).message, errors: (error as { errors: unknown }).errors });
    }
    await engine.stop();
    const everything = JSON.stringify(seen) + lines.join('\n');
    expect(everything).not.toContain(SECRET);
    expect(everything).toContain('login with ******** refused');
  }
  expect(lines.join('\n')).toContain('ferry engine started');
  // The storage description in the logs names the server, never the password in the URL.
  expect(lines.join('\n')).not.toContain(decodeURIComponent(url.password || 'no-password-in-url'));
});

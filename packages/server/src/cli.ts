import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { createEngine, generateSecretKey, isFerryError, silentLogger, type ApiKey, type Engine } from '@ferry/core';
import { openStorage } from '@ferry/core/internal';
import { resolveSecretKey } from './secret-key-file.js';
import { COMMANDS_SECTION, helpText, isHelpTopic, KEY_COMMANDS, KEY_DEFAULTS, type HelpTopic } from './cli-help.js';
import { ListenError } from './listen-check.js';
import { startServer, storageOf } from './serve.js';
import { parseDatabase, parseRateLimit, parseServeSettings, SettingsError } from './settings.js';
import { serverPlugins } from './plugins.js';
import { serverVersion } from './version.js';
import { WORKER_PARENT_VARIABLE, WorkerProcesses, workerEnvironment } from './worker-processes.js';

/**
 * The help topic a command line is about: `keys create` for `keys create --name ci`, the `keys`
 * group for `keys` with no command of it (or an unknown one), undefined for an unknown command.
 */
function topicOf(words: readonly string[]): HelpTopic | undefined {
  const [command, sub] = words;
  if (command === 'keys' && sub !== undefined && (KEY_COMMANDS as readonly string[]).includes(sub)) return `keys ${sub}` as HelpTopic;
  return command !== undefined && isHelpTopic(command) ? command : undefined;
}

/** `--help` or `-h` anywhere in a command's arguments asks for its usage (`help` only as a word of its own: `ferry help keys`). */
const isHelp = (arg: string | undefined) => arg === '--help' || arg === '-h';

/**
 * A failure in one line, as a person reads it: the error's message, then each cause's
 * (`Storage migrations failed on postgres (db:5432/ferry): connect ECONNREFUSED 127.0.0.1:5432`).
 * A password in a connection string that a driver's message might quote is masked.
 */
export function failureText(error: unknown): string {
  const parts: string[] = [];
  let current: unknown = error;
  for (let depth = 0; current !== undefined && current !== null && depth < 5; depth++) {
    const inner = current instanceof AggregateError && current.errors.length > 0 ? current.errors[0] : undefined;
    const message = (current instanceof Error ? current.message : String(current)).trim().replace(/\.$/, '');
    if (message !== '' && !parts.some((part) => part.includes(message))) parts.push(message);
    current = current instanceof Error ? (current.cause ?? inner) : undefined;
  }
  return (parts.join(': ') || 'unknown error').replace(/(\b[a-z][a-z0-9+.-]*:\/\/[^:/@\s]*):[^@\s]*@/gi, '$1:***@') + '.';
}

/** Where the CLI writes; tests pass their own. */
export interface CliIo {
  out(line: string): void;
  err(line: string): void;
}

const processIo: CliIo = { out: (line) => process.stdout.write(line + '\n'), err: (line) => process.stderr.write(line + '\n') };

async function withEngine<T>(database: string | undefined, fn: (engine: Engine) => Promise<T>): Promise<T> {
  const setting = parseDatabase(database ?? process.env.DATABASE_URL, database !== undefined ? '--database' : 'DATABASE_URL');
  const { key } = resolveSecretKey(setting, process.env.FERRY_SECRET_KEY?.trim() || undefined);
  const engine = await createEngine({ storage: storageOf(setting), plugins: serverPlugins({ outboundAllow: [] }), ...(key === undefined ? {} : { secretKey: key }), logger: silentLogger,
    // A one-shot command must not take up pipelines, ticks or queued runs while it runs.
    runtime: false, webhookDelivery: false });
  await engine.start();
  try {
    return await fn(engine);
  } finally {
    await engine.stop();
  }
}

function keyLine(key: ApiKey): string {
  return [key.id, key.key_id, key.name ?? '-', key.scopes.join(','), key.created_at, key.last_used_at ?? 'never', key.revoked_at ? `revoked ${key.revoked_at}` : 'active'].join('\t');
}

async function keys(args: string[], io: CliIo): Promise<number> {
  const [action, ...rest] = args;
  if (action === 'help') {
    io.out(helpText(topicOf(['keys', ...rest]) ?? 'keys'));
    return 0;
  }
  const { values, positionals } = parseArgs({
    args: rest,
    options: { workspace: { type: 'string' }, scopes: { type: 'string' }, name: { type: 'string' }, 'rate-limit': { type: 'string' }, database: { type: 'string' } },
    allowPositionals: true,
    strict: true,
  });
  const workspace = values.workspace ?? KEY_DEFAULTS.workspace;
  switch (action) {
    case 'create': {
      // A key's own limit replaces the server's default for it; `off` is not a key's to take.
      const limit = values['rate-limit'] === undefined ? undefined : parseRateLimit(values['rate-limit'], '--rate-limit');
      if (limit === false) throw new SettingsError('--rate-limit of a key must be <requests>/<seconds>; a key cannot turn the limit off.');
      return withEngine(values.database, async (engine) => {
        const scopes = (values.scopes ?? KEY_DEFAULTS.scopes).split(',').map((s) => s.trim()).filter(Boolean);
        const created = await engine.apiKeys.create({
          workspace,
          scopes,
          ...(values.name ? { name: values.name } : {}),
          ...(limit ? { rate_limit: { requests: limit.requests, per_seconds: limit.perSeconds } } : {}),
        });
        const limited = created.rate_limit ? ` limited to ${created.rate_limit.requests} requests per ${created.rate_limit.per_seconds} s` : '';
        io.out(`Created ${created.id} (key id ${created.key_id}) in workspace ${created.workspace_id} with scopes ${created.scopes.join(',')}${limited}. Shown once:`);
        io.out(created.key);
        return 0;
      });
    }
    case 'list':
      return withEngine(values.database, async (engine) => {
        io.out(['id', 'key_id', 'name', 'scopes', 'created_at', 'last_used_at', 'status'].join('\t'));
        let cursor: string | undefined;
        do {
          const page = await engine.apiKeys.list(workspace, { limit: 100, ...(cursor ? { cursor } : {}) });
          for (const key of page.data) io.out(keyLine(key));
          cursor = page.next_cursor ?? undefined;
        } while (cursor);
        return 0;
      });
    case 'revoke': {
      const id = positionals[0];
      if (!id) throw new SettingsError('keys revoke needs a key id (key_... or the 8-character key id).');
      return withEngine(values.database, async (engine) => {
        const revoked = await engine.apiKeys.revoke(workspace, id);
        io.out(`Revoked ${revoked.id} (key id ${revoked.key_id}).`);
        return 0;
      });
    }
    default:
      throw new SettingsError(`Unknown keys command ${JSON.stringify(action ?? '')}; use create, list or revoke.`);
  }
}

async function serve(args: string[], io: CliIo): Promise<number> {
  const settings = parseServeSettings(args, process.env);
  const server = await startServer(settings);
  // The server's log already says `ferry listening on <url>`; saying it again here printed the
  // address twice. Only when that line is not written (a log level above info) is it said here,
  // so the address of `--port 0` is always known, once. A worker's address is the parent's
  // business, not the reader's: it is in the log only.
  if (!server.logger.isLevelEnabled('info') && process.env[WORKER_PARENT_VARIABLE] === undefined) io.err(`ferry serving on ${server.url}`);
  const workers = settings.workers > 0 ? new WorkerProcesses(settings.workers, { script: process.argv[1]!, execArgv: process.execArgv, env: workerEnvironment(settings, process.env, process.pid), instanceIdBase: settings.instanceId ?? randomUUID() }, server.logger) : undefined;
  workers?.start();
  return new Promise<number>((resolve) => {
    let signals = 0;
    const stop = (signal: NodeJS.Signals) => {
      signals++;
      if (signals > 1) {
        server.logger.warn({ signal }, 'second signal: exiting without draining');
        resolve(1);
        return;
      }
      server.logger.info({ signal }, 'shutting down: draining in-flight work');
      Promise.all([workers?.stop(), server.close()]).then(
        () => resolve(0),
        (error: unknown) => {
          server.logger.error({ err: error }, 'shutdown failed');
          resolve(1);
        },
      );
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
    // A worker process whose parent is gone, even killed outright, stops as on SIGTERM.
    if (process.env[WORKER_PARENT_VARIABLE] !== undefined && process.connected) process.once('disconnect', () => stop('SIGTERM'));
  });
}

/** Runs one CLI command; resolves the exit status. */
export async function runCli(argv: readonly string[], io: CliIo = processIo): Promise<number> {
  const [command, ...args] = argv;
  // The page a mistake in the command line points at: `keys create`'s for `keys create --colour red`.
  const topic = topicOf(argv);
  try {
    if (topic !== undefined && args.some(isHelp)) {
      io.out(helpText(topic));
      return 0;
    }
    switch (command) {
      case 'serve':
        return await serve(args, io);
      case 'migrate': {
        const { values } = parseArgs({ args, options: { database: { type: 'string' } }, strict: true });
        const storage = await openStorage(storageOf(parseDatabase(values.database ?? process.env.DATABASE_URL, values.database !== undefined ? '--database' : 'DATABASE_URL')));
        io.out(`Migrated ${storage.description}.`);
        await storage.close();
        return 0;
      }
      case 'keys':
        return await keys(args, io);
      case 'secret-key':
        io.out(generateSecretKey());
        return 0;
      case undefined:
        io.out(helpText());
        return 2;
      case 'help':
      case '--help':
      case '-h': {
        if (args.length === 0) {
          io.out(helpText());
          return 0;
        }
        const asked = topicOf(args);
        if (asked === undefined) {
          io.err(`ferry: there is no command ${JSON.stringify(args.join(' '))}.\n\n${COMMANDS_SECTION}`);
          return 2;
        }
        io.out(helpText(asked));
        return 0;
      }
      // `-v` too: no command has an option of that name for it to be mistaken for.
      case '--version':
      case '-v':
        io.out(serverVersion());
        return 0;
      default:
        io.err(`ferry: unknown command ${JSON.stringify(command)}.\n\nUsage: ferry <command> [options]\n\n${COMMANDS_SECTION}\n\nRun \`ferry --help\` for every command's options.`);
        return 2;
    }
  } catch (error) {
    if (error instanceof SettingsError || (error as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' || (error as { code?: string }).code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
      const usage = topic !== undefined ? `\nRun \`ferry ${topic} --help\` for its options.` : '';
      io.err(`ferry: ${(error as Error).message}${error instanceof SettingsError ? '' : usage}`);
      return 2;
    }
    // Its message names the address and what to change: nothing to add, and no stack.
    if (error instanceof ListenError) {
      io.err(`ferry: ${error.message}`);
      return 1;
    }
    if (isFerryError(error)) {
      const fields = error.errors ? ' ' + error.errors.map((e) => `${e.pointer}: ${e.detail}`).join('; ') : '';
      // Storage that cannot be reached or migrated: the cause says why, and what to check.
      const hint = error.code === 'unavailable' ? '\nCheck that the database is running and reachable, and that DATABASE_URL (or --database) names it.' : '';
      io.err(`ferry: ${failureText(error)}${fields}${hint}`);
      return 1;
    }
    io.err(`ferry: ${failureText(error)}`);
    return 1;
  }
}

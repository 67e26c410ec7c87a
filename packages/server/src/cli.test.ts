import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closedPort } from '@ferry/testing';
import { failureText, runCli, type CliIo } from './cli.js';
import { helpEnvironment, type HelpTopic } from './cli-help.js';
import { parseServeSettings } from './settings.js';

/** The names of the variables listed in a help page's Environment section, in order. */
function environmentOf(help: string): string[] {
  const section = /\nEnvironment[^\n]*:\n((?: {2}.*\n?)+)/.exec(help);
  return section ? [...section[1]!.matchAll(/^ {2}([A-Z_]+) /gm)].map((m) => m[1]!) : [];
}

/**
 * The settings variables (`FERRY_*`, `DATABASE_URL`) that `run` reads from `process.env`, with
 * `env` as the whole of the environment's settings.
 */
async function variablesRead(env: Record<string, string>, run: () => Promise<unknown>): Promise<string[]> {
  const saved = process.env;
  const read = new Set<string>();
  const base = Object.fromEntries(Object.entries(saved).filter(([name]) => name !== 'DATABASE_URL' && !name.startsWith('FERRY_')));
  const note = (name: string | symbol) => typeof name === 'string' && (name === 'DATABASE_URL' || name.startsWith('FERRY_')) && read.add(name);
  process.env = new Proxy({ ...base, ...env }, {
    get: (target, name) => (note(name), Reflect.get(target, name)),
    has: (target, name) => (note(name), Reflect.has(target, name)),
  });
  try {
    await run();
  } finally {
    process.env = saved;
  }
  return [...read].sort();
}

/** Runs one command, collecting what it prints. */
async function cli(...argv: string[]): Promise<{ status: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const io: CliIo = { out: (line) => out.push(line), err: (line) => err.push(line) };
  const status = await runCli(argv, io);
  return { status, out: out.join('\n'), err: err.join('\n') };
}

describe('ferry CLI', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ferry-cli-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('prints each command\u2019s usage for --help, -h and `ferry help <command>`, and exits 0', async () => {
    for (const [argv, expected] of [
      [['serve', '--help'], /^Usage: ferry serve \[options\][\s\S]*--instance-id ID[\s\S]*FERRY_BOOTSTRAP_API_KEY/],
      [['serve', '--port', '9', '-h'], /^Usage: ferry serve/],
      [['keys', '--help'], /^Usage: ferry keys <command> \[options\][\s\S]*keys create[\s\S]*keys list[\s\S]*keys revoke <key id>/],
      [['keys', 'create', '--help'], /^Usage: ferry keys create \[options\]/],
      [['keys', 'list', '-h'], /^Usage: ferry keys list \[options\]/],
      [['keys', 'revoke', 'AbCd1234', '--help'], /^Usage: ferry keys revoke <key id> \[options\]/],
      [['migrate', '--help'], /^Usage: ferry migrate \[options\][\s\S]*--database URL\|FILE/],
      [['secret-key', '--help'], /^Usage: ferry secret-key\n/],
      [['help', 'keys'], /^Usage: ferry keys <command>/],
      [['help', 'keys', 'create'], /^Usage: ferry keys create \[options\]/],
      [['help', 'serve'], /^Usage: ferry serve/],
      [['--help'], /^Usage: ferry <command>[\s\S]*serve[\s\S]*migrate[\s\S]*keys create[\s\S]*secret-key/],
      [['help'], /^Usage: ferry <command>/],
    ] as const) {
      const result = await cli(...argv);
      expect({ argv, status: result.status, err: result.err }).toEqual({ argv, status: 0, err: '' });
      expect(result.out).toMatch(expected);
    }
  });

  it('prints only the subcommand\u2019s page for its --help: its usage, options with defaults and an example', async () => {
    const others: Record<string, RegExp> = {
      serve: /migrate|keys|--workspace/,
      migrate: /serve \[|keys|--port/,
      'keys create': /keys list|keys revoke|--port/,
      'keys list': /keys create|keys revoke|--scopes|--port/,
      'keys revoke': /keys create|keys list|--scopes|--port/,
      'secret-key': /ferry serve|migrate|ferry keys|--/,
    };
    for (const [topic, foreign] of Object.entries(others)) {
      const { out } = await cli(...topic.split(' '), '--help');
      expect(out.match(/Usage:/g), topic).toHaveLength(1);
      expect(out, topic).not.toMatch(foreign);
      expect(out, topic).toMatch(/\n\nExamples:\n {2}\$ .*ferry /);
      // Every option says what applies without it.
      for (const line of out.split('\n').filter((l) => /^ {2}--/.test(l))) expect(`${topic}: ${line}`).toMatch(/\(default: /);
    }
  });

  it('shows each option\u2019s default, the ones the settings apply, and examples at the end', async () => {
    const defaults = parseServeSettings([], {});
    for (const argv of [['--help'], ['serve', '--help']]) {
      const { out } = await cli(...argv);
      const option = (flag: string) => out.split('\n').find((line) => line.startsWith(`  ${flag} `)) ?? `no ${flag}`;
      expect(option('--port N')).toContain(`(default: ${defaults.port})`);
      expect(option('--host H')).toContain(`(default: ${defaults.host})`);
      expect(option('--database URL|FILE')).toContain('(default: ./ferry.db)');
      expect(defaults.database).toEqual({ kind: 'sqlite', filename: './ferry.db' });
      expect(option('--log-level L')).toContain(`(default: ${defaults.logLevel})`);
      expect(option('--role all|api|worker')).toContain(`(default: ${defaults.role})`);
      expect(option('--workers N')).toContain(`(default: ${defaults.workers})`);
      expect(option('--console on|off')).toContain('(default: on)');
      expect(defaults.console).toBe(true);
      expect(option('--rate-limit N/S|off')).toContain('(default: 600/60)');
      expect(option('--ingest-rate-limit N/S|off')).toContain('(default: 6000/60)');
      expect(option('--retention-days N')).toContain('(default: forever)');
      expect(defaults.retentionDays).toBeUndefined();
      expect(out).toMatch(/\n\nExamples:\n {2}\$ ferry serve --port 8080\n[\s\S]* {2}\$ DATABASE_URL=postgres:\/\/\S+ FERRY_SECRET_KEY=\S+ ferry serve/);
    }
    const top = (await cli('--help')).out;
    expect(top).toContain('  $ ferry keys create --scopes pipelines:read\n');
    expect(top).toMatch(/Options of keys create:\n(?: {2}.*\n)*? {2}--scopes LIST .*\(default: write\)/);
    expect(top).toMatch(/ {2}-v, --version +Print the version/);
    // Lines for a terminal, as git's and gh's are.
    for (const line of top.split('\n')) expect(line.length, line).toBeLessThanOrEqual(100);
  });

  it('prints the version of @ferry/server for --version and -v, and nothing else', async () => {
    const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
    expect(version).toMatch(/^\d+\.\d+\.\d+/);
    for (const flag of ['--version', '-v']) expect(await cli(flag)).toEqual({ status: 0, out: version, err: '' });
    // -v is ferry's alone: after a command it is an unknown option, not the version.
    const after = await cli('serve', '-v');
    expect(after.status).toBe(2);
    expect(after.err).toMatch(/Unknown option '-v'/);
  });

  it('lists every variable serve reads (FERRY_CONSOLE too), and for the other commands only those they read', async () => {
    // What the settings read, found by watching them read.
    const served = await variablesRead({}, async () => parseServeSettings([], process.env));
    expect(served).toContain('FERRY_CONSOLE');
    expect(environmentOf((await cli('serve', '--help')).out).sort()).toEqual(served);
    expect(environmentOf((await cli('--help')).out).sort()).toEqual(served);

    const database = join(dir, 'environment.db');
    const listed = await variablesRead({ DATABASE_URL: database }, () => cli('keys', 'list'));
    expect(listed).toEqual(['DATABASE_URL', 'FERRY_SECRET_KEY']);
    const migrated = await variablesRead({ DATABASE_URL: database }, () => cli('migrate'));
    expect(migrated).toEqual(['DATABASE_URL']);
    const pages: [HelpTopic, string[]][] = [
      ['migrate', migrated],
      ['keys', listed],
      ['keys create', listed],
      ['keys list', listed],
      ['keys revoke', listed],
      ['secret-key', []],
    ];
    for (const [topic, variables] of pages) {
      expect(environmentOf((await cli(...topic.split(' '), '--help')).out).sort(), topic).toEqual(variables);
      expect([...helpEnvironment(topic)].sort(), topic).toEqual(variables);
    }
    expect((await cli('secret-key', '--help')).out).not.toContain('Environment');
  });

  it('refuses a port in use with one line naming it, exit 1, before the engine starts', async () => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const { port } = holder.address() as AddressInfo;
    const database = join(dir, 'busy.db');
    try {
      const result = await cli('serve', '--host', '127.0.0.1', '--port', String(port), '--database', database);
      expect(result).toEqual({
        status: 1,
        out: '',
        err: `ferry: Cannot listen on 127.0.0.1:${port}: the address is already in use (another ferry serve, or another program). Stop it, or choose another port with --port or FERRY_PORT.`,
      });
      // Nothing was opened, migrated or generated: no database file, no key file beside it.
      expect(existsSync(database)).toBe(false);
      expect(existsSync(`${database}.key`)).toBe(false);
    } finally {
      await new Promise<void>((resolve) => holder.close(() => resolve()));
    }
  });

  it('names the command a mistyped one is not, and lists those there are', async () => {
    const unknown = await cli('serv');
    expect(unknown.status).toBe(2);
    expect(unknown.err).toMatch(/^ferry: unknown command "serv"\.\n\nUsage: ferry <command> \[options\]\n\nCommands:\n {2}serve /);
    const noHelp = await cli('help', 'serv');
    expect(noHelp.status).toBe(2);
    expect(noHelp.err).toMatch(/^ferry: there is no command "serv"\.\n\nCommands:/);
  });

  it('points at a command\u2019s --help when an option is unknown', async () => {
    const result = await cli('keys', 'create', '--colour', 'red');
    expect(result.status).toBe(2);
    expect(result.err).toMatch(/Unknown option '--colour'[\s\S]*Run `ferry keys create --help` for its options\./);
  });

  it('says why storage cannot be reached, with the cause and what to check, and no password', async () => {
    const port = await closedPort();
    const result = await cli('migrate', '--database', `postgres://ferry:hunter2@127.0.0.1:${port}/ferry`);
    expect(result.status).toBe(1);
    expect(result.err).toContain(`ferry: Storage migrations failed on postgres (127.0.0.1:${port}/ferry): connect ECONNREFUSED 127.0.0.1:${port}.`);
    expect(result.err).toContain('Check that the database is running and reachable, and that DATABASE_URL (or --database) names it.');
    expect(result.err).not.toContain('hunter2');
  });

  it('names --database when the SQLite file\u2019s folder is missing', async () => {
    const missing = join(dir, 'no-such-folder', 'ferry.db');
    const result = await cli('keys', 'list', '--database', missing);
    expect(result.status).toBe(2);
    expect(result.err).toBe(`ferry: --database names the SQLite file ${JSON.stringify(missing)}, but its folder ${JSON.stringify(join(dir, 'no-such-folder'))} does not exist: create it, or give another path.`);
  });

  it('writes a failure as one line of causes, masking a connection string\u2019s password', () => {
    const inner = new Error('password authentication failed for user "ferry" (postgres://ferry:s3cret@db:5432/x)');
    const outer = new Error('Storage migrations failed.', { cause: new AggregateError([inner], '') });
    expect(failureText(outer)).toBe('Storage migrations failed: password authentication failed for user "ferry" (postgres://ferry:***@db:5432/x).');
    expect(failureText(new Error('a', { cause: new Error('a') }))).toBe('a.');
    expect(failureText('plain')).toBe('plain.');
  });
});

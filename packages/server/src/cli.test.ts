import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closedPort } from '@ferry/testing';
import { failureText, runCli, type CliIo } from './cli.js';

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
      [['keys', '--help'], /^Usage: ferry keys <create\|list\|revoke>[\s\S]*keys revoke <key id>/],
      [['keys', 'create', '--help'], /^Usage: ferry keys/],
      [['migrate', '--help'], /^Usage: ferry migrate[\s\S]*--database URL\|FILE/],
      [['secret-key', '--help'], /^Usage: ferry secret-key/],
      [['help', 'keys'], /^Usage: ferry keys/],
      [['--help'], /^Usage: ferry <command>[\s\S]*serve[\s\S]*migrate[\s\S]*keys create[\s\S]*secret-key/],
    ] as const) {
      const result = await cli(...argv);
      expect({ argv, status: result.status, err: result.err }).toEqual({ argv, status: 0, err: '' });
      expect(result.out).toMatch(expected);
    }
  });

  it('points at a command\u2019s --help when an option is unknown', async () => {
    const result = await cli('keys', 'create', '--colour', 'red');
    expect(result.status).toBe(2);
    expect(result.err).toMatch(/Unknown option '--colour'[\s\S]*Run `ferry keys --help` for its options\./);
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

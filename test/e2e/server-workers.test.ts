import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, expect, it } from 'vitest';
import { sqliteStorage, webhookHeaders } from '@ferry/core';
import { generateApiKey, openStorage } from '@ferry/core/internal';
import { startWebhookReceiver } from '@ferry/testing';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MAIN = join(ROOT, 'packages/server/src/main.ts');
const SECRET = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Polls `check` on real time (the processes run on the system clock) for at most 60 s. */
async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not so after 60 s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** True while process `pid` exists. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The JSON log lines a process wrote so far, parsed. */
function logLines(output: string): Record<string, unknown>[] {
  return output.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Record<string, unknown>);
}

it('ferry serve --workers 2: three engines share the pipelines, a killed worker comes back, SIGTERM stops them all', async () => {
  const database = join(mkdtempSync(join(tmpdir(), 'ferry-workers-')), 'ferry.db');
  const key = generateApiKey().token;
  const receiver = await startWebhookReceiver();
  cleanups.push(() => receiver.close());
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', '--conditions=ferry-source', MAIN, 'serve', '--port', '0', '--workers', '2', '--outbound-allow', '127.0.0.1'], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: database, FERRY_BOOTSTRAP_API_KEY: key },
  });
  cleanups.push(async () => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
  await until(() => /ferry listening on http/.test(output), 'the API process serves');
  const listening = () => logLines(output).filter((l) => l.msg === 'ferry listening on ' + String(l.url) && l.role === 'worker');
  await until(() => listening().length === 2, 'both workers listen');
  const workerPids = () => logLines(output).filter((l) => l.msg === 'worker process started').map((l) => Number(l.pid));
  expect(workerPids()).toHaveLength(2);
  const url = /ferry listening on (http:\/\/[^"\s]+)/.exec(output)![1]!;

  const call = async (path: string, body: unknown) => {
    const res = await fetch(`${url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect(res.status).toBe(201);
    return (await res.json()) as { id: string };
  };
  const destination = await call('/v2/connectors', { type: 'webhook', direction: 'destination', config: { url: receiver.url } });
  const sources: string[] = [];
  for (let i = 0; i < 3; i++) {
    const source = await call('/v2/connectors', { type: 'webhook', direction: 'source', config: { signing_secret: SECRET } });
    await call('/v2/pipelines', { name: `p${i}`, source_connector_id: source.id, destination_connector_id: destination.id, activate: true, flush_interval_ms: 100 });
    sources.push(source.id);
  }

  // Three engines (the API process and two workers), three pipelines: one each, once every engine has counted the others.
  const storage = await openStorage(sqliteStorage({ filename: database }));
  cleanups.push(() => storage.close());
  const holders = async () => new Set(((await storage.knex('leases').where('name', 'like', 'pipeline:%').andWhere('expires_at', '>', new Date().toISOString()).select('holder')) as { holder: string }[]).map((l) => l.holder));
  await until(async () => (await holders()).size === 3, 'each engine reads one pipeline');

  let sent = 0;
  const ingest = async () => {
    for (const id of sources) {
      const body = JSON.stringify({ type: 'order.created', payload: { order: ++sent } });
      const res = await fetch(`${url}/v2/ingest/${id}`, {
        method: 'POST',
        headers: { ...webhookHeaders({ id: `msg_${sent}`, timestamp: Math.floor(Date.now() / 1000), body }, [SECRET]), 'content-type': 'application/json' },
        body,
      });
      expect(res.status).toBe(202);
    }
  };
  const delivered = () => new Set(receiver.received.flatMap((r) => (JSON.parse(r.body) as { events: { payload: { order: number } }[] }).events.map((e) => e.payload.order)));
  await ingest();
  await until(() => delivered().size === sent, 'every event is delivered');

  // A worker killed outright is started again under its instance id, takes its leases back at
  // once (not after the 30 s lease time), and its pipeline goes on from its checkpoint.
  const [victim] = workerPids();
  process.kill(victim!, 'SIGKILL');
  await until(() => workerPids().length === 3, 'the killed worker is started again');
  expect(logLines(output).some((l) => l.msg === 'worker process exited; starting it again' && l.pid === victim)).toBe(true);
  const ids = logLines(output).filter((l) => l.msg === 'worker process started').map((l) => [l.worker, l.instance_id]);
  expect(ids[2]).toEqual(ids[0]);
  await until(() => logLines(output).some((l) => l.msg === 'took back the leases this instance id held in a previous process' && l.instance_id === ids[0]![1]), 'the restarted worker takes its leases back');
  await ingest();
  await until(() => delivered().size === sent, 'events after the kill are delivered');

  // SIGTERM to the API process drains and stops every process.
  child.kill('SIGTERM');
  expect(await exited).toBe(0);
  for (const pid of workerPids()) expect(alive(pid)).toBe(false);
  expect(logLines(output).filter((l) => l.msg === 'ferry stopped')).toHaveLength(3);
}, 150_000);

import { fork, type ChildProcess } from 'node:child_process';
import type { Logger as PinoLogger } from 'pino';
import type { ServerSettings } from './settings.js';

/** Set in a worker process's environment: the pid of the `ferry serve` that started it. */
export const WORKER_PARENT_VARIABLE = 'FERRY_WORKER_OF';

/** First pause before a worker that exited is started again, doubling up to {@link RESTART_CAP_MS}. */
const RESTART_BASE_MS = 1_000;
const RESTART_CAP_MS = 30_000;
/** A worker that ran this long before exiting starts again after the first pause, not a longer one. */
const HEALTHY_RUN_MS = 60_000;

/**
 * The environment of a worker process: the parent's, with the settings the parent resolved
 * (flags included) spelled as variables, so the child reads exactly what the parent runs with
 * and nothing secret (a database URL with its password) appears on a command line, which any
 * user of the machine can read. The role, port and host are the child's own: a worker, with its
 * `/healthz` and `/metrics` on a free port of 127.0.0.1.
 */
export function workerEnvironment(settings: ServerSettings, parentEnv: NodeJS.ProcessEnv, parentPid: number): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...parentEnv,
    FERRY_ROLE: 'worker',
    FERRY_PORT: '0',
    FERRY_HOST: '127.0.0.1',
    FERRY_WORKERS: '0',
    DATABASE_URL: settings.database.kind === 'postgres' ? settings.database.connectionString : settings.database.filename,
    FERRY_OUTBOUND_ALLOW: settings.outboundAllow.join(','),
    FERRY_LOG_LEVEL: settings.logLevel,
    [WORKER_PARENT_VARIABLE]: String(parentPid),
  };
  if (settings.secretKey !== undefined) env.FERRY_SECRET_KEY = settings.secretKey;
  if (settings.retentionDays !== undefined) env.FERRY_RETENTION_DAYS = String(settings.retentionDays);
  else delete env.FERRY_RETENTION_DAYS;
  // A worker serves no API: it has no key to make.
  delete env.FERRY_BOOTSTRAP_API_KEY;
  // Each worker gets an id of its own when it is started (see `WorkerCommand.instanceIdBase`).
  delete env.FERRY_INSTANCE_ID;
  return env;
}

/** How to start one worker process (the same `ferry` executable, and Node's flags, as this one). */
export interface WorkerCommand {
  /** The script `ferry` runs from (`process.argv[1]`). */
  script: string;
  /** Node's flags of this process (`process.execArgv`: a loader in development). */
  execArgv: readonly string[];
  env: NodeJS.ProcessEnv;
  /**
   * Worker `n` runs as engine `<base>-worker-<n>`, the same id each time it is started again, so
   * a worker that crashed takes its leases back at once instead of after the lease time.
   */
  instanceIdBase: string;
}

/**
 * `ferry serve --workers N`: N worker processes beside this one, each an engine of its own on the
 * same database, so pipelines use more than one core. They share the work the way any engines on
 * one database do: each streaming pipeline is read by one of them under its lease, spread evenly
 * (see the engine's stream share), and runs, replays and deliveries are claimed by any.
 *
 * A worker that exits while this process runs is started again after a pause (1 s doubling to
 * 30 s; back to 1 s after a minute of running), under the same instance id: it takes back at
 * once the leases it held (its pipelines, runs, replays, deliveries), which would otherwise wait
 * out their lease time. On
 * shutdown each worker gets SIGTERM and drains as `ferry serve` does; one whose parent dies
 * without a word (SIGKILL) sees its IPC channel close and shuts down the same way.
 */
export class WorkerProcesses {
  private readonly children = new Set<ChildProcess>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private stopping = false;

  constructor(
    private readonly count: number,
    private readonly command: WorkerCommand,
    private readonly logger: PinoLogger,
  ) {}

  /** Starts every worker. */
  start(): void {
    for (let slot = 1; slot <= this.count; slot++) this.launch(slot, 0);
  }

  /** Workers running now. */
  get running(): number {
    return this.children.size;
  }

  private launch(slot: number, failures: number): void {
    if (this.stopping) return;
    // Monotonic: how long it ran, whatever the wall clock does meanwhile.
    const startedAt = performance.now();
    // Logs go straight to this process's stdout and stderr: one stream of JSON lines.
    const env = { ...this.command.env, FERRY_INSTANCE_ID: `${this.command.instanceIdBase}-worker-${slot}` };
    const child = fork(this.command.script, ['serve'], { execArgv: [...this.command.execArgv], env, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    this.children.add(child);
    this.logger.info({ worker: slot, pid: child.pid, instance_id: env.FERRY_INSTANCE_ID }, 'worker process started');
    child.on('error', (error) => this.logger.error({ worker: slot, err: error.message }, 'worker process could not be started'));
    child.on('exit', (code, signal) => {
      this.children.delete(child);
      if (this.stopping) return;
      const healthy = performance.now() - startedAt >= HEALTHY_RUN_MS;
      const attempt = healthy ? 0 : failures + 1;
      const delayMs = Math.min(RESTART_BASE_MS * 2 ** Math.min(attempt, 10), RESTART_CAP_MS);
      this.logger.error({ worker: slot, pid: child.pid, code, signal, restart_in_ms: delayMs }, 'worker process exited; starting it again');
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        this.launch(slot, attempt);
      }, delayMs);
      this.timers.add(timer);
    });
  }

  /** Asks every worker to drain and stop (SIGTERM), and resolves when all have exited. */
  async stop(): Promise<void> {
    this.stopping = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    await Promise.all(
      [...this.children].map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            child.once('exit', () => resolve());
            child.kill('SIGTERM');
          }),
      ),
    );
  }
}

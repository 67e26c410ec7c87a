import type { Engine } from '@ferry/core';
import type { RequestLog } from '@ferry/http';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** Prometheus figures of one server: requests as they happen, storage figures read at scrape time. */
export interface ServerMetrics {
  registry: Registry;
  /** Counts one answered request (the API's `onRequest` hook). */
  observe(entry: RequestLog): void;
  /** The text exposition format. */
  render(): Promise<string>;
}

type Rows = Array<Record<string, unknown>>;

/**
 * Creates the metrics of a server over an engine. Storage figures are a handful of grouped counts
 * on indexed columns, run when Prometheus scrapes, never on the request path.
 */
export function createMetrics(engine: Engine): ServerMetrics {
  const registry = new Registry();
  // Process and Node.js figures under their standard names (process_*, nodejs_*), which stock
  // dashboards and alerts expect.
  collectDefaultMetrics({ register: registry });
  const requests = new Counter({
    name: 'ferry_http_requests_total',
    help: 'HTTP requests answered, by method, route template and status.',
    labelNames: ['method', 'route', 'status'],
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'ferry_http_request_duration_seconds',
    help: 'Time to answer an HTTP request, by method and route template.',
    labelNames: ['method', 'route'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  const knex = engine.storage.knex;
  const grouped = (name: string, help: string, label: string, query: () => Promise<Rows>, all: readonly string[] = []) =>
    new Gauge({
      name,
      help,
      labelNames: [label],
      registers: [registry],
      async collect() {
        this.reset();
        for (const value of all) this.set({ [label]: value }, 0);
        for (const row of await query()) this.set({ [label]: String(row.k) }, Number(row.n));
      },
    });
  grouped('ferry_pipelines', 'Live pipelines by state.', 'state', () => knex('pipelines').whereNull('deleted_at').select('state as k').count('* as n').groupBy('state'), ['draft', 'active', 'paused', 'deleting']);
  grouped('ferry_runs', 'Pipeline runs by status.', 'status', () => knex('runs').select('status as k').count('* as n').groupBy('status'), ['queued', 'running', 'succeeded', 'failed']);
  grouped('ferry_deliveries', 'Webhook deliveries by status.', 'status', () => knex('deliveries').select('status as k').count('* as n').groupBy('status'), ['pending', 'retrying', 'delivered', 'failed']);
  grouped(
    'ferry_run_events',
    'Events counted by the runs that moved them: read, written, filtered, dead-lettered.',
    'outcome',
    async () => {
      const row = ((await knex('runs').sum({ read: 'events_read', written: 'events_written', filtered: 'events_filtered', dead_lettered: 'events_dead_lettered' })) as Rows)[0] ?? {};
      return Object.entries(row).map(([k, n]) => ({ k, n: n ?? 0 }));
    },
  );
  const count = async (query: ReturnType<typeof knex>) => Number(((await query.count('* as n')) as Rows)[0]?.n ?? 0);
  new Gauge({
    name: 'ferry_queue_depth',
    help: 'Work waiting, by queue: platform events not yet fanned out, deliveries pending or retrying, replays requested, runs queued.',
    labelNames: ['queue'],
    registers: [registry],
    async collect() {
      this.set({ queue: 'outbox' }, await count(knex('platform_events').whereNull('fanned_out_at')));
      this.set({ queue: 'deliveries' }, await count(knex('deliveries').whereIn('status', ['pending', 'retrying'])));
      this.set({ queue: 'replays' }, await count(knex('dead_letters').whereNotNull('replay_requested_at')));
      this.set({ queue: 'runs' }, await count(knex('runs').where({ status: 'queued' })));
    },
  });
  return {
    registry,
    observe(entry) {
      requests.inc({ method: entry.method, route: entry.route, status: String(entry.status) });
      duration.observe({ method: entry.method, route: entry.route }, entry.durationMs / 1000);
    },
    render: () => registry.metrics(),
  };
}

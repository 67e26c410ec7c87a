import type { Engine } from '@ferry/core';
import type { StorageStats } from '@ferry/core/internal';
import { ENUMERATIONS, engineContext } from '@ferry/core/internal';
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

/**
 * Creates the metrics of a server over an engine. Storage figures are read once per scrape
 * (`engine.storage.repos.stats`), never on the request path.
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
  // One read of the storage figures per scrape (set by render), shared by the gauges below.
  let scrape: Promise<StorageStats> | undefined;
  const stats = () => scrape ?? engineContext(engine).storage.repos.stats.read();
  const gauge = (name: string, help: string, label: string, pick: (s: StorageStats) => Record<string, number>, all: readonly string[] = []) =>
    new Gauge({
      name,
      help,
      labelNames: [label],
      registers: [registry],
      async collect() {
        this.reset();
        for (const value of all) this.set({ [label]: value }, 0);
        for (const [value, n] of Object.entries(pick(await stats()))) this.set({ [label]: value }, n);
      },
    });
  gauge('ferry_pipelines', 'Live pipelines by state.', 'state', (s) => s.pipelinesByState, ENUMERATIONS.PIPELINE_STATES);
  gauge('ferry_runs', 'Pipeline runs by status.', 'status', (s) => s.runsByStatus, ENUMERATIONS.RUN_STATUSES);
  gauge('ferry_deliveries', 'Webhook deliveries by status.', 'status', (s) => s.deliveriesByStatus, ENUMERATIONS.DELIVERY_STATUSES);
  gauge('ferry_run_events', 'Events counted by the runs that moved them: read, written, filtered, dead-lettered.', 'outcome', (s) => s.runEvents);
  gauge(
    'ferry_queue_depth',
    'Work waiting, by queue: platform events not yet fanned out, deliveries pending or retrying, replays requested, runs queued.',
    'queue',
    (s) => s.queues,
  );
  new Gauge({
    name: 'ferry_pipelines_held',
    help: 'Pipelines whose flow is held: a source, destination or storage failing, the batch retried with backoff.',
    registers: [registry],
    async collect() {
      this.set((await stats()).holds.length);
    },
  });
  const perHold = (name: string, help: string, value: (hold: StorageStats['holds'][number], now: number) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['pipeline_id'],
      registers: [registry],
      async collect() {
        this.reset();
        const now = engineContext(engine).clock.now();
        for (const hold of (await stats()).holds) this.set({ pipeline_id: hold.pipeline_id }, value(hold, now));
      },
    });
  perHold('ferry_pipeline_held_seconds', 'How long a held pipeline has been held, in seconds.', (hold, now) => Math.max(0, (now - Date.parse(hold.since)) / 1000));
  perHold('ferry_pipeline_held_events', 'Events of the batch a held pipeline waits to write.', (hold) => hold.events_waiting);
  new Gauge({
    name: 'ferry_source_lag_bytes',
    help: 'What a source holds back in its system for a pipeline this server runs, in bytes (a Postgres replication slot: WAL not yet confirmed).',
    labelNames: ['pipeline_id'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [pipelineId, bytes] of engine.sourceLag()) this.set({ pipeline_id: pipelineId }, bytes);
    },
  });
  const perBackfill = (name: string, help: string, value: (progress: { rowsRead: number; tablesRemaining: number }) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['pipeline_id', 'backfill_id'],
      registers: [registry],
      collect() {
        this.reset();
        for (const [pipelineId, progress] of engine.backfillProgress()) this.set({ pipeline_id: pipelineId, backfill_id: progress.id }, value(progress));
      },
    });
  perBackfill('ferry_backfill_rows_read', 'Rows a backfill running in a source this server has open has read and committed.', (p) => p.rowsRead);
  perBackfill('ferry_backfill_tables_remaining', 'Tables such a backfill has not read to their end yet, the one being read included.', (p) => p.tablesRemaining);
  return {
    registry,
    observe(entry) {
      requests.inc({ method: entry.method, route: entry.route, status: String(entry.status) });
      duration.observe({ method: entry.method, route: entry.route }, entry.durationMs / 1000);
    },
    async render() {
      scrape = engineContext(engine).storage.repos.stats.read();
      try {
        return await registry.metrics();
      } finally {
        scrape = undefined;
      }
    },
  };
}

import type { Db } from '../sql-helpers.js';

/** Counts by one value (a state or a status); a value with no rows is absent. */
export type CountsBy = Record<string, number>;

/** Everything an operator's dashboard reads, across workspaces. */
export interface StorageStats {
  /** Live (not deleted) pipelines by state. */
  pipelinesByState: CountsBy;
  /** Runs by status. */
  runsByStatus: CountsBy;
  /** Webhook deliveries by status. */
  deliveriesByStatus: CountsBy;
  /** Events the runs moved, summed: `read`, `written`, `filtered`, `dead_lettered`. */
  runEvents: { read: number; written: number; filtered: number; dead_lettered: number };
  /** Work waiting: platform events not fanned out, deliveries pending or retrying, replays requested, runs queued. */
  queues: { outbox: number; deliveries: number; replays: number; runs: number };
  /** Pipelines whose flow is held: since when, and the events of the batch that waits. */
  holds: { pipeline_id: string; since: string; events_waiting: number }[];
}

type Rows = Array<Record<string, unknown>>;

/**
 * Operational figures across every workspace, for metrics endpoints; never on a request path.
 * Grouped counts on indexed columns, a handful of queries per call.
 */
export class StatsRepo {
  constructor(private readonly db: Db) {}

  /** The figures of {@link StorageStats}, read now. */
  async read(): Promise<StorageStats> {
    const grouped = async (query: PromiseLike<unknown>): Promise<CountsBy> => Object.fromEntries(((await query) as Rows).map((r) => [String(r.k), Number(r.n)]));
    const count = async (query: PromiseLike<unknown>): Promise<number> => Number(((await query) as Rows)[0]?.n ?? 0);
    const sums = ((await this.db('runs').sum({ read: 'events_read', written: 'events_written', filtered: 'events_filtered', dead_lettered: 'events_dead_lettered' })) as Rows)[0] ?? {};
    return {
      pipelinesByState: await grouped(this.db('pipelines').whereNull('deleted_at').select('state as k').count('* as n').groupBy('state')),
      runsByStatus: await grouped(this.db('runs').select('status as k').count('* as n').groupBy('status')),
      deliveriesByStatus: await grouped(this.db('deliveries').select('status as k').count('* as n').groupBy('status')),
      // SUM over no rows is NULL.
      runEvents: { read: Number(sums.read ?? 0), written: Number(sums.written ?? 0), filtered: Number(sums.filtered ?? 0), dead_lettered: Number(sums.dead_lettered ?? 0) },
      queues: {
        outbox: await count(this.db('platform_events').whereNull('fanned_out_at').count('* as n')),
        deliveries: await count(this.db('deliveries').whereIn('status', ['pending', 'retrying']).count('* as n')),
        replays: await count(this.db('dead_letters').whereNotNull('replay_requested_at').count('* as n')),
        runs: await count(this.db('runs').where({ status: 'queued' }).count('* as n')),
      },
      holds: ((await this.db('pipeline_holds').select('pipeline_id', 'since', 'events_waiting').orderBy('pipeline_id')) as { pipeline_id: string; since: string; events_waiting: number | string }[]).map((h) => ({
        pipeline_id: h.pipeline_id,
        since: h.since,
        events_waiting: Number(h.events_waiting),
      })),
    };
  }
}

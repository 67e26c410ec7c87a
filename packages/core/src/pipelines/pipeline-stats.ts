import { inputSchemas, type PipelineStats } from '../common/index.js';
import type { PipelineMinuteRow, Repositories } from '../storage/index.js';

/** The window of `pipelines.stats` when no `minutes` is given: the input schema's default, declared there once. */
export const DEFAULT_STATS_MINUTES: number = inputSchemas.pipelineStats.properties.minutes.default;

/** One minute in ms: the granularity of the per-minute counts. */
export const MINUTE_MS = 60_000;

/**
 * The start of the minute (UTC) that `ms` falls in, spelled like every stored timestamp
 * (`2026-11-26T19:04:00.000Z`): the key of a `pipeline_minutes` row. Computed on the number, not
 * by cutting the text, so it holds for any date `toISOString` can write.
 */
export function minuteStart(ms: number): string {
  return new Date(ms - (((ms % MINUTE_MS) + MINUTE_MS) % MINUTE_MS)).toISOString();
}

/**
 * A pipeline's figures over the `minutes` minutes that end with the current one (at `now`, ms):
 * `per_minute` dense, one entry per minute oldest first with zeros where nothing committed, so a
 * chart needs no gap-filling of its own; and its events that are `dead_lettered` and
 * `replaying` now. The caller has found the pipeline in its workspace (`minutes` checked).
 */
export async function readPipelineStats(repos: Repositories, pipeline: { id: string; workspace_id: string }, minutes: number, now: number): Promise<PipelineStats> {
  const current = Date.parse(minuteStart(now));
  const first = current - (minutes - 1) * MINUTE_MS;
  const since = new Date(first).toISOString();
  const until = new Date(current + MINUTE_MS).toISOString();
  // A row past `until` (an engine whose clock runs ahead committed it) is not of this window.
  const rows = await repos.pipelineMinutes.range(pipeline.workspace_id, pipeline.id, since, until);
  const open = await repos.events.countOpen(pipeline.id);
  const byMinute = new Map<string, PipelineMinuteRow>(rows.map((r) => [r.minute, r]));
  const perMinute: PipelineStats['per_minute'] = [];
  for (let at = first; at <= current; at += MINUTE_MS) {
    const minute = new Date(at).toISOString();
    const row = byMinute.get(minute);
    perMinute.push({
      minute,
      events_read: row?.events_read ?? 0,
      events_written: row?.events_written ?? 0,
      events_filtered: row?.events_filtered ?? 0,
      events_dead_lettered: row?.events_dead_lettered ?? 0,
    });
  }
  return { pipeline_id: pipeline.id, minutes, since, until, dead_lettered: open.dead_lettered, replaying: open.replaying, per_minute: perMinute };
}

import { api, type Page } from './api.js';
import type { Connector, PipelineStats } from './records.js';

/**
 * The connectors a set of pipelines name, by id: the first page of the listing, then each one it
 * did not hold, by id. One that cannot be read (deleted meanwhile) is absent.
 */
export async function connectorsById(ids: Iterable<string>): Promise<Map<string, Connector>> {
  const byId = new Map<string, Connector>();
  const first = await api<Page<Connector>>('GET', '/v2/connectors', { query: { limit: 100 } });
  for (const c of first.data) byId.set(c.id, c);
  const missing = [...new Set(ids)].filter((id) => !byId.has(id));
  const found = await Promise.all(missing.map((id) => api<Connector>('GET', `/v2/connectors/${encodeURIComponent(id)}`).catch(() => undefined)));
  for (const c of found) if (c) byId.set(c.id, c);
  return byId;
}

/** A pipeline's last hour, or undefined when the key may not read it. */
export async function pipelineStats(id: string, minutes = 60): Promise<PipelineStats | undefined> {
  return api<PipelineStats>('GET', `/v2/pipelines/${encodeURIComponent(id)}/stats`, { query: { minutes } }).catch(() => undefined);
}

/** Waits `ms` (a refresh after an action, so the list shows its effect). */
export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

import { api, ApiError, problemOf, type Page, type Problem } from './api.js';
import type { ApiConnector, Connector, PipelineStats } from './records.js';

/** A connector as the API answers it, with the id standing in for a name it does not have. */
export function named(connector: ApiConnector): Connector {
  return { ...connector, name: connector.name ?? connector.id };
}

/**
 * The connectors a set of pipelines name, by id: the first page of the listing, then each one it
 * did not hold, by id. One that cannot be read (deleted meanwhile) is absent.
 */
export async function connectorsById(ids: Iterable<string>): Promise<Map<string, Connector>> {
  const byId = new Map<string, Connector>();
  const first = await api<Page<ApiConnector>>('GET', '/v2/connectors', { query: { limit: 100 } });
  for (const c of first.data) byId.set(c.id, named(c));
  const missing = [...new Set(ids)].filter((id) => !byId.has(id));
  const found = await Promise.all(missing.map((id) => api<ApiConnector>('GET', `/v2/connectors/${encodeURIComponent(id)}`).catch(() => undefined)));
  for (const c of found) if (c) byId.set(c.id, named(c));
  return byId;
}

/** A pipeline's last hour, or why it could not be read (a key without the scope: `forbidden`). */
export async function pipelineStats(id: string, minutes = 60): Promise<PipelineStats | Problem> {
  try {
    return await api<PipelineStats>('GET', `/v2/pipelines/${encodeURIComponent(id)}/stats`, { query: { minutes } });
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    return problemOf(error);
  }
}

/** The figures of {@link pipelineStats}, or undefined when they could not be read. */
export function figures(stats: PipelineStats | Problem | undefined): PipelineStats | undefined {
  return stats && 'per_minute' in stats ? stats : undefined;
}

/** Waits `ms` (a refresh after an action, so the list shows its effect). */
export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

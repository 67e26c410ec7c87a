import type { RouteResult } from '../route.js';

/** 200 with a JSON body. */
export const ok = (body: unknown): RouteResult => ({ status: 200, body });
/** 201 with the new resource and where it lives. */
export const created = (body: { id: string }, collection: string): RouteResult => ({
  status: 201,
  body,
  headers: { location: `${collection}/${encodeURIComponent(body.id)}` },
});
/** 202: accepted, finishing in the background. */
export const accepted = (body: unknown): RouteResult => ({ status: 202, body });
/** 204: done, nothing to say. */
export const noContent = (): RouteResult => ({ status: 204 });

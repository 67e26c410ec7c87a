import { API_BASE } from './config.js';
import { storedApiKey } from './session.js';

/** A field problem of a 400 answer. */
export interface FieldProblem {
  pointer: string;
  code: string;
  detail?: string;
}

/** An RFC 9457 problem as the API answers it, or one the console made for a failed request. */
export interface Problem {
  status: number;
  code: string;
  title?: string;
  detail?: string;
  errors?: FieldProblem[];
  current_status?: string;
  request_id?: string;
}

/** A request the API refused (or that never reached it); `problem` is what to show. */
export class ApiError extends Error {
  constructor(readonly problem: Problem) {
    super(problem.detail ?? problem.title ?? problem.code);
  }
}

/** A page of a listing. */
export type { Page } from './records.js';

type Query = Record<string, string | number | undefined | null>;

/** A random UUID; `crypto.randomUUID` exists only in secure contexts (https, localhost). */
function uuid(): string {
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6]! & 0x0f) | 0x40;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const h = [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/**
 * Idempotency keys of POSTs whose outcome is unknown (no answer, a 5xx, the first request still
 * running), by method, path and body: the same action tried again reuses its key, so the API
 * answers the first outcome instead of acting twice (a rotation generating a second secret).
 */
const pendingIntents = new Map<string, string>();

/** Listeners told when the API answers 401: the key was revoked or is wrong. */
const unauthenticatedListeners = new Set<() => void>();

/** Calls `listener` whenever an answer is 401 `unauthenticated`; returns the unsubscribe. */
export function onUnauthenticated(listener: () => void): () => void {
  unauthenticatedListeners.add(listener);
  return () => unauthenticatedListeners.delete(listener);
}

function url(path: string, query: Query = {}): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== '') params.set(k, String(v));
  const search = params.toString();
  return `${API_BASE}${path}${search ? `?${search}` : ''}`;
}

/**
 * One call to the `/v2` API with the stored key (or `key` when given, as the sign-in does).
 * Problems become {@link ApiError}s; a network failure becomes one too, with code
 * `network_error`, so every failure is shown the same way.
 */
export async function api<T>(method: string, path: string, options: { query?: Query; body?: unknown; key?: string } = {}): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  const key = options.key ?? storedApiKey();
  if (key) headers.authorization = `Bearer ${key}`;
  let body: string | undefined;
  if (options.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(options.body);
  }
  const intent = `${method} ${path} ${body ?? ''}`;
  if (method === 'POST') {
    const idempotencyKey = pendingIntents.get(intent) ?? uuid();
    pendingIntents.set(intent, idempotencyKey);
    headers['idempotency-key'] = idempotencyKey;
  }
  let response: Response;
  try {
    response = await fetch(url(path, options.query), { method, headers, body, credentials: 'omit', cache: 'no-store', referrerPolicy: 'no-referrer' });
  } catch (error) {
    throw new ApiError({ status: 0, code: 'network_error', title: 'The API could not be reached', detail: error instanceof Error ? error.message : String(error) });
  }
  // An outcome the API decided: the next click is a new action.
  if (response.status < 500 && response.status !== 409) pendingIntents.delete(intent);
  else if (response.status === 409 && response.headers.get('retry-after') === null) pendingIntents.delete(intent);
  if (response.status === 204) return undefined as T;
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (!response.ok) {
    const problem: Problem =
      parsed && typeof parsed === 'object' && 'code' in parsed
        ? { ...(parsed as Problem), status: response.status }
        : { status: response.status, code: `http_${response.status}`, title: response.statusText, detail: 'The server answered without a problem document.' };
    if (response.status === 401 && options.key === undefined) for (const listener of unauthenticatedListeners) listener();
    throw new ApiError(problem);
  }
  return parsed as T;
}

/** Turns anything thrown into a {@link Problem}. */
export function problemOf(error: unknown): Problem {
  if (error instanceof ApiError) return error.problem;
  return { status: 0, code: 'console_error', detail: error instanceof Error ? error.message : String(error) };
}

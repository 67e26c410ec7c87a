import { createHash, randomUUID } from 'node:crypto';
import type { Engine } from '@ferry/core';
import { idempotencyRecords, type AuthContext } from '@ferry/core/internal';
import { HttpProblem } from './problem.js';
import type { HttpResponse } from './types.js';

/** How long a key remembers its first answer (docs/api.md, The HTTP protocol: idempotency). */
const RETENTION_MS = 24 * 3600 * 1000;
/** How long a first request may run before a retry may take its key over (it crashed). */
const LOCK_MS = 5 * 60 * 1000;
/** Response headers that are part of the answer, as opposed to per-request ones. */
const STORED_HEADERS = ['content-type', 'location'];

/** Validates an `Idempotency-Key` header: 1 to 255 printable ASCII characters. */
export function assertIdempotencyKey(key: string): void {
  if (key.length === 0 || key.length > 255 || !/^[\x20-\x7e]+$/.test(key)) {
    throw new HttpProblem('validation_failed', 'The Idempotency-Key header is not valid.', {
      errors: [{ pointer: '/headers/idempotency-key', code: key.length > 255 ? 'too_long' : 'invalid', detail: 'Use 1 to 255 printable ASCII characters.' }],
    });
  }
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * Hash of what makes two requests "the same": method, path and the body's meaning (key order
 * and whitespace do not count, so a client library that re-serializes its retry is not refused).
 */
export function requestHash(method: string, path: string, body: unknown): string {
  return createHash('sha256').update(`${method} ${path}\n${body === undefined ? '' : canonical(body)}`).digest('hex');
}

/**
 * Runs a POST under an `Idempotency-Key` (docs/api.md, The HTTP protocol; Stripe's rules): the first request
 * claims the key and its answer is stored; a retry with the same body gets that answer again
 * (with `Idempotent-Replayed: true`), one with another body 422 `idempotency_key_reused`, one
 * while the first is still running 409. Answers that say nothing was done (400s, 5xx) are not
 * stored, so the client may fix the request and retry under the same key.
 */
export async function withIdempotency(
  engine: Engine,
  auth: AuthContext,
  key: string,
  hash: string,
  run: () => Promise<HttpResponse>,
): Promise<HttpResponse> {
  const records = idempotencyRecords(engine);
  const now = engine.clock.now();
  const owner = randomUUID();
  const begun = await records.begin(
    {
      api_key_id: auth.api_key_id,
      key,
      workspace_id: auth.workspace_id,
      request_hash: hash,
      owner_token: owner,
      locked_until: new Date(now + LOCK_MS).toISOString(),
      created_at: new Date(now).toISOString(),
      expires_at: new Date(now + RETENTION_MS).toISOString(),
    },
    new Date(now).toISOString(),
  );
  if (!begun.started) {
    const existing = begun.existing;
    if (existing.request_hash !== hash) {
      throw new HttpProblem('idempotency_key_reused', 'This Idempotency-Key was used with a different request.');
    }
    if (existing.status !== 'completed' || existing.response_status === null) {
      throw new HttpProblem('idempotency_key_in_progress', 'A request with this Idempotency-Key is still being processed; retry later.', { retryAfterSeconds: 1 });
    }
    return {
      status: existing.response_status,
      headers: { ...(existing.response_headers ?? {}), 'idempotent-replayed': 'true' },
      ...(existing.response_body ? { body: existing.response_body } : {}),
    };
  }
  let response: HttpResponse;
  try {
    response = await run();
  } catch (error) {
    await records.abandon(auth.api_key_id, key, owner).catch(() => undefined);
    throw error;
  }
  if (response.status === 400 || response.status >= 500) {
    await records.abandon(auth.api_key_id, key, owner).catch(() => undefined);
  } else {
    const headers: Record<string, string> = {};
    for (const name of STORED_HEADERS) if (response.headers[name] !== undefined) headers[name] = response.headers[name];
    await records.complete(auth.api_key_id, key, owner, { status: response.status, headers, body: response.body ?? '' });
  }
  return response;
}

import { type EngineContext, reader } from '../context/index.js';
import type { IdempotencyBegin, IdempotencyRecord } from '../storage/index.js';

/** What a request that claimed an `Idempotency-Key` answered, as stored for its retries. */
export interface IdempotentResponse {
  status: number;
  /** The headers that belong to the answer (`content-type`, `location`), not per-request ones. */
  headers: Record<string, string>;
  body: string;
}

/** The claim of a new request on a key: what {@link IdempotencyService.begin} stores first. */
export type IdempotencyClaim = Omit<IdempotencyRecord, 'status' | 'response_status' | 'response_headers' | 'response_body'>;

/** A sealed body starts with the secret box's version tag; a body stored before sealing is JSON or empty. */
const SEALED = /^v\d+\./;

/**
 * `Idempotency-Key` records (scoped per API key, kept 24 h): the first request claims its key,
 * its answer is stored for retries. Stored bodies are sealed under the engine's secret key
 * (AES-256-GCM, bound to the API key id and the idempotency key), because some answers show a
 * secret once (a connector's generated signing secret, a webhook subscription's secret): kept in
 * clear for a day, a database dump would hold them. Every body is sealed, so no response can
 * slip through by being missed by a rule about which ones hold secrets.
 */
export class IdempotencyService {
  constructor(private readonly ctx: EngineContext) {}

  /**
   * Claims the key for a new request, or returns what is stored under it, its body opened. An
   * expired record, or a processing one whose lock ran out (its request crashed), is taken over.
   */
  async begin(claim: IdempotencyClaim, now: string): Promise<IdempotencyBegin> {
    const begun = await reader(this.ctx).idempotency.begin(claim, now);
    if (begun.started || begun.existing.response_body === null) return begun;
    const existing = begun.existing;
    return { started: false, existing: { ...existing, response_body: this.open(existing.api_key_id, existing.key, existing.response_body!) } };
  }

  /** Stores, sealed, the answer of the request that claimed the key; false when the claim was lost. */
  async complete(apiKeyId: string, key: string, ownerToken: string, response: IdempotentResponse): Promise<boolean> {
    const body = response.body === '' ? '' : this.ctx.box.seal(response.body, aad(apiKeyId, key));
    return reader(this.ctx).idempotency.complete(apiKeyId, key, ownerToken, { ...response, body });
  }

  /** Forgets a claim whose request must not be replayed (a 400 or a 5xx), so the client may retry. */
  async abandon(apiKeyId: string, key: string, ownerToken: string): Promise<void> {
    await reader(this.ctx).idempotency.abandon(apiKeyId, key, ownerToken);
  }

  private open(apiKeyId: string, key: string, stored: string): string {
    // A record completed before bodies were sealed is read as it is; it expires within a day.
    return SEALED.test(stored) ? this.ctx.box.open(stored, aad(apiKeyId, key)) : stored;
  }
}

function aad(apiKeyId: string, key: string): string {
  return `idempotency/${apiKeyId}/${key}`;
}

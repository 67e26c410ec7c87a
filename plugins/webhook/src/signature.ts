import { createHash, createHmac } from 'node:crypto';

/**
 * Standard Webhooks signing (contract section 8), kept local until `@ferry/core` exports its own
 * `signWebhook`: the scheme is small and fixed, so both must give the same bytes.
 */

/** The headers that authenticate one request. */
export interface SignatureHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
  /** Same value as `webhook-signature`, for receivers written against the contract's name. */
  'x-service-signature': string;
}

/**
 * Signs `body` as sent: `v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<body>")>`. The key is the
 * secret's decoded bytes (not its text), which is what off-the-shelf verifiers expect.
 */
export function signatureHeaders(key: Buffer, id: string, timestampSeconds: number, body: string): SignatureHeaders {
  const timestamp = String(timestampSeconds);
  const mac = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64');
  const signature = `v1,${mac}`;
  return { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': signature, 'x-service-signature': signature };
}

/**
 * The `webhook-id` of a batch request: derived from its event ids, so a batch sent again after a
 * failure carries the same id and receivers can deduplicate it like a single event.
 */
export function batchId(eventIds: readonly string[]): string {
  return 'bat_' + createHash('sha256').update(eventIds.join('\n')).digest('hex').slice(0, 26);
}

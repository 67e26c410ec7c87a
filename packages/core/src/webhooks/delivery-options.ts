import { FerryError } from '../common/index.js';

/** Tuning of webhook delivery. Every field has a default that follows docs/api.md, Webhook delivery. */
export interface DeliveryOptions {
  /** Send deliveries from this engine. `false` leaves it to other engines on the same storage. Default true. */
  enabled: boolean;
  /**
   * When the attempts of one retry cycle happen, in ms after its first attempt (T+0). Default:
   * 0, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 24 h. The last entry is the end of the window.
   */
  scheduleMs: readonly number[];
  /** Spread of each attempt but the first and the last, as a fraction of its offset. Default 0.1 (+/-10 %). */
  jitter: number;
  /** Whole-request timeout of one attempt, on the engine clock. Default 15 000. */
  timeoutMs: number;
  /** Deliveries in hand at once in this engine: being sent, waiting for a request slot, or waiting for their outcome to be committed. Default 64. */
  maxInFlight: number;
  /** Requests in flight at once per subscription, from this engine. Default 8. */
  perSubscription: number;
  /** Lifetime of a delivery's claim; more than twice `timeoutMs`. Default 60 000. */
  leaseTtlMs: number;
  /** How often the engine looks for deliveries and platform events written by other engines, in ms. Default 5 000. */
  pollIntervalMs: number;
  /** A subscription whose deliveries have all failed for this long is disabled. Default 5 days. */
  disableAfterMs: number;
  /** Bytes of the response body kept with each attempt. Default 1024. */
  responseBodyBytes: number;
  /** Outbox events fanned out per transaction. Default 500. */
  fanoutBatchSize: number;
}

/** The defaults of {@link DeliveryOptions}. */
export const DEFAULT_DELIVERY_OPTIONS: DeliveryOptions = Object.freeze({
  enabled: true,
  scheduleMs: Object.freeze([0, 5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 86_400_000]),
  jitter: 0.1,
  timeoutMs: 15_000,
  maxInFlight: 64,
  perSubscription: 8,
  leaseTtlMs: 60_000,
  pollIntervalMs: 5_000,
  disableAfterMs: 5 * 86_400_000,
  responseBodyBytes: 1024,
  fanoutBatchSize: 500,
});

/** What `createEngine({ webhookDelivery })` takes: any subset of {@link DeliveryOptions}, or `false`. */
export type DeliveryOptionsInput = Partial<DeliveryOptions>;

/** Options with defaults filled in; throws `configuration_invalid` on options that cannot work. */
export function resolveDeliveryOptions(input: DeliveryOptionsInput | false | undefined): DeliveryOptions {
  if (input === false) return { ...DEFAULT_DELIVERY_OPTIONS, enabled: false };
  const options = { ...DEFAULT_DELIVERY_OPTIONS, ...input };
  const s = options.scheduleMs;
  if (s.length === 0 || s[0] !== 0 || s.some((v, i) => !Number.isFinite(v) || (i > 0 && v <= s[i - 1]!))) {
    throw new FerryError('configuration_invalid', 'webhookDelivery.scheduleMs starts at 0 and increases strictly.');
  }
  if (!(options.jitter >= 0 && options.jitter < 0.5)) throw new FerryError('configuration_invalid', 'webhookDelivery.jitter is in [0, 0.5).');
  for (const key of ['timeoutMs', 'maxInFlight', 'perSubscription', 'pollIntervalMs', 'leaseTtlMs', 'disableAfterMs', 'fanoutBatchSize'] as const) {
    if (!(Number.isInteger(options[key]) && options[key] > 0)) throw new FerryError('configuration_invalid', `webhookDelivery.${key} is a positive integer.`);
  }
  if (!(Number.isInteger(options.responseBodyBytes) && options.responseBodyBytes >= 0)) throw new FerryError('configuration_invalid', 'webhookDelivery.responseBodyBytes is an integer, 0 or more.');
  // A claim waits up to a quarter of its lifetime before it is checked and extended, then the
  // request may take `timeoutMs`, then its outcome is recorded: all of it inside the lease.
  if (options.leaseTtlMs <= 2 * options.timeoutMs) throw new FerryError('configuration_invalid', 'webhookDelivery.leaseTtlMs must be more than twice timeoutMs.');
  return options;
}

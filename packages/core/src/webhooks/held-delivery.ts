import type { DeliveryRow, WebhookRow } from '../storage/index.js';
import type { SigningSecrets } from './webhooks-service.js';

// The worker claims and sends; the completer commits what came back. Both speak of the same held
// deliveries and subscriptions, so their shapes live below both.

/** A delivery this engine holds a claim on. */
export interface Held {
  row: DeliveryRow;
  token: string;
  /** When the claim was taken or last extended (engine clock). */
  heldSince: number;
}

/** A subscription as the worker needs it, refreshed at every claim. */
export interface Target {
  row: WebhookRow;
  /** Undefined when they cannot be decrypted. */
  secrets: SigningSecrets | undefined;
  /** When the row was read (engine clock). */
  readAt: number;
}

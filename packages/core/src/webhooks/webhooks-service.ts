import { type SecretBox, generateWebhookSecret, webhookSecretBytes } from '../crypto/index.js';
import { normalizeTimestamp, DELIVERY_STATUSES, PLATFORM_EVENT_TYPES, type Count, type CreateWebhookInput, type Delivery, type DeliveryStatus, type DeliveryWithAttempts, type Page, type PageParams, type RecoverDeliveriesInput, type RotateWebhookSecretInput, type UpdateWebhookInput, type WebhookSecret, type WebhookSecretRotation, type WebhookSubscription, type WebhookSubscriptionWithSecret, FerryError, notFound, validationError, paginate, inputSchemas, readOnlyFields, assertSchema } from '../common/index.js';
import { assertWorkspaceId, nowIso, reader, transact, type EngineContext, NO_ENGINE_HOOKS, type EngineHooks } from '../context/index.js';
import { assertUrlAllowed } from '../net/index.js';
import type { DeliveryRow, WebhookRow } from '../storage/index.js';

/** How many old secrets keep signing after rotations. */
export const MAX_PREVIOUS_SECRETS = 5;
/** Default overlap of an old secret after a rotation, in seconds. */
export const DEFAULT_SECRET_OVERLAP_S = 86_400;

/** A retired secret that still signs until it expires. */
interface PreviousSecret {
  secret: string;
  expires_at: string;
}

/**
 * Webhook subscriptions (docs/api.md, Webhook delivery and Webhook secrets): CRUD, secrets (generated, shown once and by
 * `getSecret`, rotated with an overlap), and the delivery records: listing, redelivery and
 * recovery. Sending is the delivery worker's job.
 */
export class WebhooksService {
  constructor(
    private readonly ctx: EngineContext,
    private readonly hooks: EngineHooks = NO_ENGINE_HOOKS,
  ) {}

  /** Creates a subscription; the response is the only one besides `getSecret` to show the secret. */
  async create(workspaceId: string, input: CreateWebhookInput): Promise<WebhookSubscriptionWithSecret> {
    assertWorkspaceId(workspaceId);
    this.assertInput(inputSchemas.createWebhook, input);
    assertUrlAllowed(input.url, this.ctx.settings.outboundAllow);
    const secret = input.secret ?? generateWebhookSecret();
    assertSecret(secret, '/secret');
    const now = nowIso(this.ctx);
    const id = this.ctx.ids.create('webhook');
    const row: WebhookRow = {
      id,
      workspace_id: workspaceId,
      url: input.url,
      events: [...input.events],
      description: input.description ?? null,
      enabled: input.enabled ?? true,
      disabled_reason: null,
      secret: this.seal(workspaceId, id, secret),
      previous_secrets: null,
      failing_since: null,
      created_at: now,
      updated_at: now,
    };
    await transact(this.ctx, async (repos) => {
      await repos.workspaces.create(workspaceId, now);
      await repos.webhooks.insert(row);
    });
    return { ...present(row), secret };
  }

  /** One subscription, without its secret. */
  async get(workspaceId: string, id: string): Promise<WebhookSubscription> {
    return present(await this.row(workspaceId, id));
  }

  /** Subscriptions of the workspace, oldest first. */
  async list(workspaceId: string, params: PageParams = {}): Promise<Page<WebhookSubscription>> {
    const repos = reader(this.ctx);
    return paginate(
      this.ctx.cursors,
      params,
      { scope: { resource: 'webhooks', workspaceId, filters: {} }, key: (row: WebhookRow) => [row.id] },
      (after, limit, order) => repos.webhooks.list(workspaceId, after, limit, order),
      (rows) => rows.map(present),
    );
  }

  /** The current signing secret. */
  async getSecret(workspaceId: string, id: string): Promise<WebhookSecret> {
    const row = await this.row(workspaceId, id);
    return { secret: this.ctx.box.open(row.secret, aad(workspaceId, id)) };
  }

  /**
   * Every secret that signs right now: the current one first, then old ones still inside their
   * overlap. The delivery worker signs with all of them (space-separated signatures).
   */
  async signingSecrets(workspaceId: string, id: string): Promise<string[]> {
    return openSigningSecrets(this.ctx.box, await this.row(workspaceId, id)).at(this.ctx.clock.now());
  }

  /** Updates url, events, enabled or description; the url is checked again. */
  async update(workspaceId: string, id: string, input: UpdateWebhookInput): Promise<WebhookSubscription> {
    this.assertInput(inputSchemas.updateWebhook, input, ['secret']);
    if (input.url !== undefined) assertUrlAllowed(input.url, this.ctx.settings.outboundAllow);
    const patch: Partial<WebhookRow> = { updated_at: nowIso(this.ctx) };
    if (input.url !== undefined) patch.url = input.url;
    if (input.events !== undefined) patch.events = [...input.events];
    if (input.description !== undefined) patch.description = input.description;
    if (input.enabled !== undefined) {
      patch.enabled = input.enabled;
      // Re-enabling by hand clears the reason the engine disabled it and its failure streak.
      if (input.enabled) Object.assign(patch, { disabled_reason: null, failing_since: null });
    }
    await transact(this.ctx, async (repos) => {
      if (!(await repos.webhooks.update(workspaceId, id, patch))) throw notFound('webhook', id);
    });
    return this.get(workspaceId, id);
  }

  /** Deletes a subscription; its pending and retrying deliveries are dropped. */
  async delete(workspaceId: string, id: string): Promise<void> {
    await transact(this.ctx, async (repos) => {
      if (!(await repos.webhooks.delete(workspaceId, id))) throw notFound('webhook', id);
      await repos.deliveries.deletePending(id);
    });
  }

  /**
   * Replaces the signing secret (given, or generated). The old one keeps signing alongside for
   * `previous_secret_expires_in` seconds (default 86400, 0..604800); at most 5 old secrets are kept.
   */
  async rotateSecret(workspaceId: string, id: string, input: RotateWebhookSecretInput = {}): Promise<WebhookSecretRotation> {
    this.assertInput(inputSchemas.rotateWebhookSecret, input);
    const secret = input.secret ?? generateWebhookSecret();
    assertSecret(secret, '/secret');
    const overlapS = input.previous_secret_expires_in ?? DEFAULT_SECRET_OVERLAP_S;
    const nowMs = this.ctx.clock.now();
    const now = new Date(nowMs).toISOString();
    const expiresAt = new Date(nowMs + overlapS * 1000).toISOString();
    await transact(this.ctx, async (repos) => {
      // Locked: of two concurrent rotations the second sees the first's secret and keeps it as
      // a previous one, so no secret that was handed out is lost.
      const row = await repos.webhooks.get(workspaceId, id, 'update');
      if (!row) throw notFound('webhook', id);
      const old = this.ctx.box.open(row.secret, aad(workspaceId, id));
      const kept = [...(overlapS > 0 ? [{ secret: old, expires_at: expiresAt }] : []), ...this.previous(row)]
        .filter((p) => p.expires_at > now)
        .slice(0, MAX_PREVIOUS_SECRETS);
      await repos.webhooks.update(workspaceId, id, {
        secret: this.ctx.box.seal(secret, aad(workspaceId, id)),
        previous_secrets: kept.length === 0 ? null : this.ctx.box.seal(JSON.stringify(kept), aad(workspaceId, id) + ':previous'),
        updated_at: now,
      });
    });
    return { secret, previous_secret_expires_at: overlapS > 0 ? expiresAt : null };
  }

  /** Deliveries of a subscription, optionally by `status` and creation `since`. */
  async listDeliveries(workspaceId: string, id: string, params: PageParams & { status?: DeliveryStatus; since?: string } = {}): Promise<Page<Delivery>> {
    if (params.status !== undefined && !DELIVERY_STATUSES.includes(params.status)) {
      throw validationError([{ pointer: '/status', code: 'enum', detail: `status is one of ${DELIVERY_STATUSES.join(', ')}.` }]);
    }
    const filters = { status: params.status, since: params.since === undefined ? undefined : normalizeTimestamp(params.since, '/since') };
    await this.row(workspaceId, id);
    const repos = reader(this.ctx);
    return paginate(
      this.ctx.cursors,
      params,
      { scope: { resource: `deliveries:${id}`, workspaceId, filters }, key: (row: DeliveryRow) => [row.id] },
      (after, limit, order) => repos.deliveries.list(workspaceId, id, filters, after, limit, order),
      (rows) => rows.map(presentDelivery),
    );
  }

  /** One delivery with its attempt history. */
  async getDelivery(workspaceId: string, id: string, deliveryId: string): Promise<DeliveryWithAttempts> {
    const row = await reader(this.ctx).deliveries.get(workspaceId, id, deliveryId);
    if (!row) throw notFound('delivery', deliveryId);
    return this.withAttempts(row);
  }

  /**
   * One delivery of any subscription of the workspace, by its id alone, with its attempt history
   * (`GET /v2/deliveries/{id}`): for a delivery id found in a log or a receiver's records.
   */
  async findDelivery(workspaceId: string, deliveryId: string): Promise<DeliveryWithAttempts> {
    const row = await reader(this.ctx).deliveries.find(workspaceId, deliveryId);
    if (!row) throw notFound('delivery', deliveryId);
    return this.withAttempts(row);
  }

  private async withAttempts(row: DeliveryRow): Promise<DeliveryWithAttempts> {
    const deliveryId = row.id;
    const attempts = await reader(this.ctx).deliveries.attempts(deliveryId);
    return {
      ...presentDelivery(row),
      attempt_history: attempts.map((a) => ({
        id: a.id,
        attempted_at: a.attempted_at,
        response_status: a.response_status,
        duration_ms: a.duration_ms,
        response_body: a.response_body,
        error: a.error,
      })),
    };
  }

  /**
   * Starts a fresh retry cycle for a delivered or failed delivery, with the same `webhook-id`.
   * 409 `delivery_in_progress` while it is pending or retrying.
   */
  async redeliver(workspaceId: string, id: string, deliveryId: string): Promise<Delivery> {
    const now = nowIso(this.ctx);
    const delivery = await transact(this.ctx, async (repos) => {
      const row = await repos.deliveries.get(workspaceId, id, deliveryId);
      if (!row) throw notFound('delivery', deliveryId);
      const patch = restart(now);
      if (!(await repos.deliveries.update(deliveryId, patch, ['delivered', 'failed']))) {
        throw new FerryError('delivery_in_progress', 'The delivery is still being attempted.', { currentStatus: row.status });
      }
      return presentDelivery({ ...row, ...patch });
    });
    this.hooks.deliveriesDue();
    return delivery;
  }

  /** Redelivers every failed delivery created in `[since, until)`, oldest first; returns how many. */
  async recover(workspaceId: string, id: string, input: RecoverDeliveriesInput): Promise<Count> {
    assertSchema(inputSchemas.recoverDeliveries, input);
    const since = normalizeTimestamp(input.since, '/since');
    const until = input.until === undefined ? undefined : normalizeTimestamp(input.until, '/until');
    const now = nowIso(this.ctx);
    const result = await transact(this.ctx, async (repos) => {
      if (!(await repos.webhooks.get(workspaceId, id))) throw notFound('webhook', id);
      let count = 0;
      for (const row of await repos.deliveries.failedBetween(workspaceId, id, since, until)) {
        if (await repos.deliveries.update(row.id, restart(now), ['failed'])) count++;
      }
      return { count };
    });
    if (result.count > 0) this.hooks.deliveriesDue();
    return result;
  }

  private async row(workspaceId: string, id: string): Promise<WebhookRow> {
    const row = await reader(this.ctx).webhooks.get(workspaceId, id);
    if (!row) throw notFound('webhook', id);
    return row;
  }

  private previous(row: WebhookRow): PreviousSecret[] {
    return previousSecrets(this.ctx.box, row);
  }

  private seal(workspaceId: string, id: string, secret: string): string {
    return this.ctx.box.seal(secret, aad(workspaceId, id));
  }

  // Unknown event types are a rule (422), not a shape error, so they are checked before the schema.
  private assertInput(schema: Parameters<typeof assertSchema>[0], body: object, readOnly: string[] = []): void {
    const input = body as { events?: unknown };
    if (Array.isArray(input?.events)) {
      const unknown = input.events.filter((e) => typeof e === 'string' && !(PLATFORM_EVENT_TYPES as readonly string[]).includes(e));
      if (unknown.length > 0) {
        throw new FerryError('unknown_event_type', `Unknown event type(s): ${unknown.join(', ')}.`, {
          errors: unknown.map((e) => ({ pointer: `/events/${(input.events as unknown[]).indexOf(e)}`, code: 'unknown_event_type', detail: `Known types: ${PLATFORM_EVENT_TYPES.join(', ')}.` })),
        });
      }
    }
    assertSchema(schema, input, { readOnly: [...readOnlyFields.webhook, ...readOnly] });
  }
}

function previousSecrets(box: SecretBox, row: WebhookRow): PreviousSecret[] {
  return row.previous_secrets === null ? [] : (JSON.parse(box.open(row.previous_secrets, aad(row.workspace_id, row.id) + ':previous')) as PreviousSecret[]);
}

/** A subscription's secrets, decrypted once: `at(ms)` gives those that sign at that time. */
export interface SigningSecrets {
  at(nowMs: number): string[];
}

/**
 * Opens a subscription's signing secrets: the current one, then the old ones, each until its
 * overlap ends (the delivery worker signs with all of them, space-separated).
 */
export function openSigningSecrets(box: SecretBox, row: WebhookRow): SigningSecrets {
  const current = box.open(row.secret, aad(row.workspace_id, row.id));
  const previous = previousSecrets(box, row);
  return { at: (nowMs) => [current, ...previous.filter((p) => Date.parse(p.expires_at) > nowMs).map((p) => p.secret)] };
}

function aad(workspaceId: string, id: string): string {
  return `webhook:${workspaceId}:${id}`;
}

function assertSecret(secret: string, pointer: string): void {
  if (!webhookSecretBytes(secret)) {
    throw validationError([{ pointer, code: 'format', detail: 'A secret is "whsec_" followed by the base64 of 24 to 64 random bytes.' }]);
  }
}

function restart(now: string): Partial<DeliveryRow> {
  return { status: 'pending', attempts: 0, next_attempt_at: now, cycle_started_at: now, updated_at: now };
}

function present(row: WebhookRow): WebhookSubscription {
  return {
    id: row.id,
    url: row.url,
    events: row.events,
    enabled: row.enabled,
    description: row.description,
    disabled_reason: row.disabled_reason,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** The public shape of a delivery row. */
export function presentDelivery(row: DeliveryRow): Delivery {
  return {
    id: row.id,
    subscription_id: row.subscription_id,
    event_id: row.event_id,
    event_type: row.event_type,
    status: row.status,
    attempts: row.attempts,
    next_attempt_at: row.next_attempt_at,
    last_attempt_at: row.last_attempt_at,
    last_response_status: row.last_response_status,
    last_error: row.last_error,
    created_at: row.created_at,
  };
}

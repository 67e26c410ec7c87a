import type { Subscription } from 'rxjs';
import type { ClockTimer } from '../common/index.js';
import type { EngineContext } from '../context/index.js';
import type { OutboundClient } from '../net/index.js';
import { CoalescedPump } from '../queue/index.js';
import type { DeliveryOptions } from './delivery-options.js';
import { DeliveryWorker } from './delivery-worker.js';
import { WebhookFanout } from './webhook-fanout.js';

/**
 * Webhook delivery in one engine: the fan-out of outbox events into deliveries and the worker
 * that sends them. Events committed by this engine start a fan-out at once; every
 * `pollIntervalMs` both look again, which is how they see events and redeliveries written by
 * other engines and take over the claims of an engine that died.
 */
export class WebhookDelivery {
  private running = false;
  private readonly fanout: WebhookFanout;
  private readonly fanouts: CoalescedPump;
  private readonly worker: DeliveryWorker;
  private events: Subscription | undefined;
  private poller: ClockTimer | undefined;

  constructor(
    private readonly ctx: EngineContext,
    private readonly client: OutboundClient,
    private readonly options: DeliveryOptions,
  ) {
    this.fanout = new WebhookFanout(ctx, options.fanoutBatchSize);
    this.worker = new DeliveryWorker(ctx, client, options);
    this.fanouts = new CoalescedPump(() => this.fanoutRound(), () => this.running);
  }

  /** Starts fanning out and sending (nothing when delivery is disabled in this engine). */
  start(): void {
    if (!this.options.enabled || this.running) return;
    this.running = true;
    this.events = this.ctx.bus.events$.subscribe(() => void this.fanouts.pump());
    this.worker.start();
    void this.fanouts.pump();
    this.schedulePoll();
  }

  /** Deliveries were made due by a redelivery or a recovery in this engine. */
  poke(): void {
    if (this.running) this.worker.poke();
  }

  /** Stops after the fan-out in progress and the sends in flight, whose outcomes are recorded. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.events?.unsubscribe();
    this.poller?.cancel();
    await this.fanouts.current;
    await this.worker.stop();
    await this.client.close();
  }

  private async fanoutRound(): Promise<boolean> {
    try {
      const { more, created } = await this.fanout.round();
      if (created > 0) this.worker.poke();
      return more;
    } catch (error) {
      this.ctx.logger.warn({ err: error }, 'webhook delivery: fan-out failed; retrying at the next poll');
      return false;
    }
  }

  private schedulePoll(): void {
    this.poller = this.ctx.clock.setTimeout(() => {
      if (!this.running) return;
      void this.fanouts.pump();
      this.worker.poke();
      this.schedulePoll();
    }, this.options.pollIntervalMs);
  }
}

/**
 * Runs rounds of queue work (claim, work, claim again) one at a time. A call while a round runs
 * does not start a second one: it asks for one more round after the current, so work queued
 * meanwhile is seen, and however many calls arrive, at most one round is waiting.
 */
export class CoalescedPump {
  private running: Promise<void> | undefined;
  private again = false;

  /**
   * @param round - one round of work; resolving `true` asks for another round right after.
   * @param active - false once the owner stops: no round starts after that.
   */
  constructor(
    private readonly round: () => Promise<boolean | void>,
    private readonly active: () => boolean,
  ) {}

  /** Runs rounds until none is asked for; resolves when the last one ends. */
  pump(): Promise<void> {
    if (!this.active()) return Promise.resolve();
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      do {
        this.again = false;
        if ((await this.round()) === true) this.again = true;
      } while (this.again && this.active());
    })().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  /** The round in progress, if any (to wait for it when stopping). */
  get current(): Promise<void> | undefined {
    return this.running;
  }
}

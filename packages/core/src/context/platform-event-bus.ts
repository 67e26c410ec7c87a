import { EventEmitter } from 'eventemitter3';
import { Subject, type Observable } from 'rxjs';
import type { PlatformEvent, PlatformEventType, Logger } from '../common/index.js';

/** Listener of one platform event type. */
export type PlatformEventListener<T extends PlatformEventType> = (event: PlatformEvent<T>) => void;

/**
 * In-process delivery of platform events, after the transaction that recorded them committed.
 * A listener that throws is logged and does not disturb the engine or the other listeners.
 */
export class PlatformEventBus {
  private readonly emitter = new EventEmitter();
  private readonly subject = new Subject<PlatformEvent>();
  /** Every platform event, as an RxJS stream. Completes when the engine stops. */
  readonly events$: Observable<PlatformEvent> = this.subject.asObservable();

  constructor(private readonly logger: Logger) {}

  private readonly wrappers = new WeakMap<object, (event: PlatformEvent) => void>();

  /** Adds a listener for one type, or `*` for all. */
  on<T extends PlatformEventType>(type: T | '*', listener: PlatformEventListener<T>): void {
    this.emitter.on(type, this.wrap(listener));
  }

  /** Adds a listener for the next event only. */
  once<T extends PlatformEventType>(type: T | '*', listener: PlatformEventListener<T>): void {
    this.emitter.once(type, this.wrap(listener));
  }

  /** Removes a listener. */
  off<T extends PlatformEventType>(type: T | '*', listener: PlatformEventListener<T>): void {
    const wrapped = this.wrappers.get(listener);
    if (wrapped) this.emitter.off(type, wrapped);
  }

  /** Hands committed events to listeners and the stream, in order. */
  publish(events: readonly PlatformEvent[]): void {
    for (const event of events) {
      this.emitter.emit(event.type, event);
      this.emitter.emit('*', event);
      this.subject.next(event);
    }
  }

  // One wrapper per listener, so `off` finds it and a throwing listener is contained.
  private wrap<T extends PlatformEventType>(listener: PlatformEventListener<T>): (event: PlatformEvent) => void {
    let wrapped = this.wrappers.get(listener);
    if (!wrapped) {
      wrapped = (event: PlatformEvent) => {
        try {
          listener(event as PlatformEvent<T>);
        } catch (error) {
          this.logger.error({ err: error, event_type: event.type, event_id: event.id }, 'platform event listener threw');
        }
      };
      this.wrappers.set(listener, wrapped);
    }
    return wrapped;
  }

  /** Ends the stream; listeners are dropped. */
  close(): void {
    this.subject.complete();
    this.emitter.removeAllListeners();
  }
}

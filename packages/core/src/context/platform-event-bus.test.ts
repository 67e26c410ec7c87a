import { describe, expect, it, vi } from 'vitest';
import type { PlatformEvent, PlatformEventType, Logger } from '../common/index.js';
import { PlatformEventBus } from './platform-event-bus.js';

function recordingLogger() {
  const errors: { obj: unknown; msg: string | undefined }[] = [];
  const logger: Logger = {
    trace: () => undefined,
    debug: () => undefined,
    info: () => undefined,
    warn: () => undefined,
    error: (obj: unknown, msg?: string) => {
      errors.push({ obj, msg });
    },
    fatal: () => undefined,
    child: () => logger,
  };
  return { logger, errors };
}

let seq = 0;
function event<T extends PlatformEventType>(type: T, data: PlatformEvent['data'] = {}): PlatformEvent<T> {
  seq += 1;
  return { id: `evt_${seq}`, type, occurred_at: '2026-11-22T10:00:00.000Z', data, workspace_id: 'ws_1' };
}

describe('PlatformEventBus', () => {
  it('delivers an event to listeners of its type only', () => {
    const bus = new PlatformEventBus(recordingLogger().logger);
    const created = vi.fn();
    const paused = vi.fn();
    bus.on('pipeline.created', created);
    bus.on('pipeline.paused', paused);
    const e = event('pipeline.created', { pipeline_id: 'pip_1' });
    bus.publish([e]);
    expect(created).toHaveBeenCalledExactlyOnceWith(e);
    expect(paused).not.toHaveBeenCalled();
  });

  it("delivers every event to '*' listeners", () => {
    const bus = new PlatformEventBus(recordingLogger().logger);
    const seen: string[] = [];
    bus.on('*', (e) => seen.push(e.type));
    bus.publish([event('pipeline.created'), event('connector.rotated'), event('event.dead_lettered')]);
    expect(seen).toEqual(['pipeline.created', 'connector.rotated', 'event.dead_lettered']);
  });

  it('keeps publication order, typed listeners before wildcard ones for each event, and registration order', () => {
    const bus = new PlatformEventBus(recordingLogger().logger);
    const log: string[] = [];
    bus.on('*', (e) => log.push(`*:${e.id}`));
    bus.on('pipeline.started', (e) => log.push(`a:${e.id}`));
    bus.on('pipeline.started', (e) => log.push(`b:${e.id}`));
    bus.on('pipeline.completed', (e) => log.push(`c:${e.id}`));
    const first = event('pipeline.started');
    const second = event('pipeline.completed');
    bus.publish([first, second]);
    expect(log).toEqual([`a:${first.id}`, `b:${first.id}`, `*:${first.id}`, `c:${second.id}`, `*:${second.id}`]);
  });

  it('calls a once listener a single time', () => {
    const bus = new PlatformEventBus(recordingLogger().logger);
    const fn = vi.fn();
    const any = vi.fn();
    bus.once('pipeline.failed', fn);
    bus.once('*', any);
    bus.publish([event('pipeline.failed'), event('pipeline.failed')]);
    expect(fn).toHaveBeenCalledTimes(1);
    expect(any).toHaveBeenCalledTimes(1);
  });

  it('stops calling a listener after off, for a type and for *', () => {
    const bus = new PlatformEventBus(recordingLogger().logger);
    const fn = vi.fn();
    const any = vi.fn();
    const other = vi.fn();
    bus.on('pipeline.created', fn);
    bus.on('pipeline.created', other);
    bus.on('*', any);
    bus.publish([event('pipeline.created')]);
    bus.off('pipeline.created', fn);
    bus.off('*', any);
    bus.publish([event('pipeline.created')]);
    expect(fn).toHaveBeenCalledTimes(1);
    expect(any).toHaveBeenCalledTimes(1);
    expect(other).toHaveBeenCalledTimes(2);
  });

  it('off only removes the listener from the type it names', () => {
    const bus = new PlatformEventBus(recordingLogger().logger);
    const fn = vi.fn();
    bus.on('pipeline.created', fn);
    bus.on('pipeline.deleted', fn);
    bus.off('pipeline.created', fn);
    bus.publish([event('pipeline.created'), event('pipeline.deleted')]);
    expect(fn).toHaveBeenCalledTimes(1);
    expect(fn.mock.calls[0]?.[0].type).toBe('pipeline.deleted');
  });

  it('off with a listener that was never added is harmless', () => {
    const bus = new PlatformEventBus(recordingLogger().logger);
    expect(() => bus.off('pipeline.created', () => undefined)).not.toThrow();
  });

  it('logs a throwing listener and still calls the others and the stream', () => {
    const { logger, errors } = recordingLogger();
    const bus = new PlatformEventBus(logger);
    const after = vi.fn();
    const any = vi.fn();
    const streamed: string[] = [];
    bus.events$.subscribe((e) => streamed.push(e.id));
    const boom = new Error('listener exploded');
    bus.on('connector.error', () => {
      throw boom;
    });
    bus.on('connector.error', after);
    bus.on('*', any);
    const e = event('connector.error');
    expect(() => bus.publish([e, event('connector.error')])).not.toThrow();
    expect(after).toHaveBeenCalledTimes(2);
    expect(any).toHaveBeenCalledTimes(2);
    expect(streamed).toHaveLength(2);
    expect(errors).toHaveLength(2);
    expect(errors[0]?.obj).toMatchObject({ err: boom, event_type: 'connector.error', event_id: e.id });
    expect(errors[0]?.msg).toEqual(expect.any(String));
  });

  it('streams every published event through events$', () => {
    const bus = new PlatformEventBus(recordingLogger().logger);
    const received: PlatformEvent[] = [];
    bus.events$.subscribe((e) => received.push(e));
    const events = [event('pipeline.created'), event('pipeline.activated')];
    bus.publish(events);
    expect(received).toEqual(events);
  });

  it('completes the stream and drops listeners on close', () => {
    const bus = new PlatformEventBus(recordingLogger().logger);
    const fn = vi.fn();
    const next = vi.fn();
    const complete = vi.fn();
    bus.on('*', fn);
    bus.events$.subscribe({ next, complete });
    bus.close();
    expect(complete).toHaveBeenCalledTimes(1);
    bus.publish([event('pipeline.created')]);
    expect(fn).not.toHaveBeenCalled();
    expect(next).not.toHaveBeenCalled();
  });
});

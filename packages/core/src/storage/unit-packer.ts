import { Worker } from 'node:worker_threads';
import { BLOCK_EVENTS, compressUnit, PACK_UNIT_SOURCE, type PackableUnit } from './event-units.js';

/**
 * The thread's code, plain CommonJS run with `eval` (as the SQLite writer thread's, for the same
 * reasons): it packs each unit it is sent as `event-units.ts` does and hands the body back,
 * its memory transferred rather than copied.
 */
const THREAD_SOURCE = `
const { parentPort } = require('node:worker_threads');
${PACK_UNIT_SOURCE}
parentPort.on('message', (message) => {
  try {
    const body = packUnit(message);
    // A Buffer of its own (not a slice of the pool's), so its memory can move to the engine's thread.
    const own = new Uint8Array(body.length);
    own.set(body);
    parentPort.postMessage({ id: message.id, body: own }, [own.buffer]);
  } catch (error) {
    parentPort.postMessage({ id: message.id, error: String(error && error.message || error) });
  }
});
`;

/**
 * Compresses and packs event-log units on a thread of its own, for storage that has no writer
 * thread (Postgres, SQLite in memory). Deflating a unit of 1,000 events costs the event loop
 * about 0.8 ms done in place, and more than that through zlib's asynchronous API (a stream and a
 * hand-off to libuv's pool for every block, measured 1.2 µs an event); sending the blocks to this
 * thread costs a tenth of it.
 *
 * One thread per process, started on the first unit and never keeping the process alive. Should
 * it die, the units it held are packed in place and the next unit starts another.
 */
class UnitPacker {
  private worker: Worker | undefined;
  private readonly pending = new Map<number, { unit: PackableUnit; resolve: (body: Buffer) => void }>();
  private nextId = 0;

  pack(unit: PackableUnit): Promise<Buffer> {
    const worker = this.thread();
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.pending.set(id, { unit, resolve });
      worker.ref();
      worker.postMessage({ id, blocks: unit.blocks, count: unit.count, size: BLOCK_EVENTS, ranges: unit.ranges });
    });
  }

  private thread(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(THREAD_SOURCE, { eval: true });
    worker.unref();
    worker.on('message', (answer: { id: number; body?: Uint8Array; error?: string }) => {
      const waiting = this.pending.get(answer.id);
      this.pending.delete(answer.id);
      if (this.pending.size === 0) worker.unref();
      if (!waiting) return;
      // The thread's own failure to pack is the same failure in place: packing is deterministic.
      waiting.resolve(answer.body ? Buffer.from(answer.body.buffer, answer.body.byteOffset, answer.body.byteLength) : compressUnit(waiting.unit));
    });
    const fail = () => {
      if (this.worker === worker) this.worker = undefined;
      const waiting = [...this.pending.values()];
      this.pending.clear();
      for (const w of waiting) w.resolve(compressUnit(w.unit));
    };
    worker.on('error', fail);
    worker.on('exit', fail);
    this.worker = worker;
    return worker;
  }
}

const packer = new UnitPacker();

/** {@link compressUnit}, on the process's packing thread: the engine's event loop goes on meanwhile. */
export function packUnitOffThread(unit: PackableUnit): Promise<Buffer> {
  return packer.pack(unit);
}

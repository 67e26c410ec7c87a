import { describe, expect, it } from 'vitest';
import { TransactionScope } from './transaction-scope.js';

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('TransactionScope', () => {
  it('gives each flow its own transaction, across awaits, and none outside', async () => {
    const scope = new TransactionScope<string>();
    expect(scope.getStore()).toBeUndefined();
    const seen: (string | undefined)[] = [];
    const flow = (name: string) =>
      scope.run(name, async () => {
        seen.push(scope.getStore());
        await tick();
        seen.push(scope.getStore());
        return name;
      });
    const outside = (async () => {
      await tick();
      return scope.getStore();
    })();
    expect(await Promise.all([flow('a'), flow('b')])).toEqual(['a', 'b']);
    expect(seen.sort()).toEqual(['a', 'a', 'b', 'b']);
    expect(await outside).toBeUndefined();
    expect(scope.getStore()).toBeUndefined();
  });

  it('answers none once the last transaction ended, even to work a transaction left running', async () => {
    const scope = new TransactionScope<string>();
    let late: Promise<string | undefined> | undefined;
    await scope.run('t', async () => {
      late = (async () => {
        await tick();
        await tick();
        return scope.getStore();
      })();
    });
    expect(await late).toBeUndefined();
    // And it works again for the next transaction.
    expect(await scope.run('u', async () => (await tick(), scope.getStore()))).toBe('u');
  });

  it('settles with the transaction work, a rejection included', async () => {
    const scope = new TransactionScope<string>();
    await expect(scope.run('t', async () => Promise.reject(new Error('rolled back')))).rejects.toThrow('rolled back');
    expect(scope.getStore()).toBeUndefined();
    expect(await scope.run('v', async () => scope.getStore())).toBe('v');
  });
});

import { describe, expect, it } from 'vitest';
import { FerryError } from '../common/index.js';
import { isStorageUnavailable, translateStorageError } from './storage-errors.js';

function withCode(code: string, message = 'x'): Error {
  return Object.assign(new Error(message), { code });
}

describe('isStorageUnavailable', () => {
  it.each([
    ['connection refused', withCode('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432')],
    ['connection reset', withCode('ECONNRESET')],
    ['host not found', withCode('ENOTFOUND')],
    ['every address refused (AggregateError)', Object.assign(new AggregateError([withCode('ECONNREFUSED')], 'x'), { code: 'ECONNREFUSED' })],
    ['refusals inside an AggregateError only', new AggregateError([withCode('ECONNREFUSED'), withCode('ECONNREFUSED')], 'x')],
    ['Postgres shutting down (57P01)', withCode('57P01', 'terminating connection due to administrator command')],
    ['Postgres starting up (57P03)', withCode('57P03')],
    ['Postgres out of connections (53300)', withCode('53300')],
    ['Postgres connection exception class 08', withCode('08006')],
    ['pg dropped socket', new Error('Connection terminated unexpectedly')],
    ['pg dropped socket, as knex words it', new Error('select * from "connectors" - Connection terminated unexpectedly')],
    ['pg connect timeout', new Error('timeout expired')],
    ['knex pool timeout', Object.assign(new Error('Knex: Timeout acquiring a connection.'), { name: 'KnexTimeoutError' })],
    ['SQLite busy', withCode('SQLITE_BUSY', 'database is locked')],
    ['SQLite busy snapshot', withCode('SQLITE_BUSY_SNAPSHOT')],
    ['a wrapped cause', new Error('outer', { cause: withCode('ECONNREFUSED') })],
  ])('%s: yes', (_what, error) => {
    expect(isStorageUnavailable(error)).toBe(true);
  });

  it.each([
    ['unique violation', withCode('23505')],
    ['undefined table', withCode('42P01')],
    ['SQLite constraint', withCode('SQLITE_CONSTRAINT_UNIQUE')],
    ['a plain error', new Error('boom')],
    ['an engine error, even unavailable', new FerryError('unavailable', 'The engine is shutting down.')],
    ['an engine error caused by an outage', new FerryError('internal', 'x', { cause: withCode('ECONNREFUSED') })],
    ['null', null],
    ['a string', 'ECONNREFUSED'],
  ])('%s: no', (_what, error) => {
    expect(isStorageUnavailable(error)).toBe(false);
  });

  it('does not loop on a cyclic cause', () => {
    const a = new Error('a') as Error & { cause?: unknown };
    const b = new Error('b', { cause: a });
    a.cause = b;
    expect(isStorageUnavailable(a)).toBe(false);
  });
});

describe('translateStorageError', () => {
  it('makes an outage `unavailable` with a retry hint and the driver error as cause, never its message', () => {
    const driver = withCode('ECONNREFUSED', 'connect ECONNREFUSED 10.1.2.3:5432 user=ferry');
    const translated = translateStorageError(driver);
    expect(translated).toBeInstanceOf(FerryError);
    expect(translated).toMatchObject({ code: 'unavailable', status: 503, retryAfterSeconds: 5, cause: driver });
    expect((translated as Error).message).not.toContain('10.1.2.3');
  });

  it('returns anything else unchanged', () => {
    const error = withCode('23505');
    expect(translateStorageError(error)).toBe(error);
  });
});

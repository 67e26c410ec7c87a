import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connectorContext, type ConnectorContextOptions } from '@ferry/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classifyError, isRecordError } from './connection.js';
import { snowflake } from './index.js';

/** The test servers listen on loopback: an engine reaching them allows 127.0.0.1. */
const loopbackContext = <T,>(config: T, options: ConnectorContextOptions = {}) => connectorContext(config, { outboundAllow: ['127.0.0.1'], ...options });

const failure = (code: string | number, sqlState?: string, name = 'OperationFailedError') => Object.assign(new Error(`failure ${code}`), { code, sqlState, name });

describe('classifyError', () => {
  it('sorts what the driver and the server report into retryable outages and fatal configuration', () => {
    expect(classifyError(failure(390100), 'check')).toMatchObject({ code: 'auth_failed', retryable: false });
    expect(classifyError(failure('390144'), 'check')).toMatchObject({ code: 'auth_failed', retryable: false });
    // An expired token, the driver's HTTP 401 and its terminated connection: log in again.
    for (const code of ['390112', 401004, 407002]) expect(classifyError(failure(code), 'destination')).toMatchObject({ code: 'session_expired', retryable: true });
    expect(classifyError(failure(401001, undefined, 'NetworkError'), 'source')).toMatchObject({ code: 'source_unavailable', retryable: true });
    expect(classifyError(failure('002003', '42S02'), 'destination')).toMatchObject({ code: 'table_not_found', retryable: false });
    expect(classifyError(failure('000904', '42000'), 'source')).toMatchObject({ code: 'column_not_found', retryable: false });
    expect(classifyError(failure('003001', '42501'), 'destination')).toMatchObject({ code: 'permission_denied', retryable: false });
    expect(classifyError(failure('000606', '57P03'), 'destination')).toMatchObject({ code: 'configuration_invalid', retryable: false });
    expect(classifyError(failure('000604', '57014'), 'destination')).toMatchObject({ code: 'timeout', retryable: true });
    expect(classifyError(failure('001003', '42000'), 'source')).toMatchObject({ code: 'query_failed', retryable: false });
    expect(classifyError(failure(404037), 'check')).toMatchObject({ code: 'configuration_invalid', retryable: false });
    expect(classifyError(new Error('error:1C800064:Provider routines::bad decrypt'), 'check')).toMatchObject({ code: 'auth_failed', retryable: false });
    expect(classifyError(failure('000625', '57P01'), 'destination')).toMatchObject({ code: 'destination_unavailable', retryable: true });
  });

  it("takes a row's data errors as that row's, and nothing else", () => {
    expect(isRecordError(failure('100038', '22018'))).toBe(true);
    expect(isRecordError(failure('100072', '22000'))).toBe(true);
    expect(isRecordError(failure('002003', '42S02'))).toBe(false);
    expect(isRecordError(failure(401001))).toBe(false);
  });
});

describe('loginTimeoutMs', () => {
  // An account URL that takes the request and never answers: only the plugin's own bound ends the login.
  let silent: Server;
  beforeAll(async () => {
    silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  });
  afterAll(() => {
    silent.closeAllConnections();
    silent.close();
  });

  it('bounds a login that gets no answer: a retryable timeout', async () => {
    const plugin = snowflake({ loginTimeoutMs: 300, loginRetries: 0 });
    const config = { account: 'a', username: 'u', password: 'p', access_url: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`, table: 't' };
    expect(await plugin.check!(loopbackContext(config))).toMatchObject({ health: 'down', error: { code: 'timeout' } });
  }, 10_000);
});

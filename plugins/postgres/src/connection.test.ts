import { ConnectorError } from '@ferry/core';
import { createConnectorOutbound } from '@ferry/core/internal';
import { describe, expect, it } from 'vitest';
import { classifyError, clientConfig, isRecordError } from './connection.js';

const pgError = (code: string, message = 'server said no') => Object.assign(new Error(message), { code });

describe('postgres error classification', () => {
  it('holds the flow on outages and overload, retryably', () => {
    expect(classifyError(pgError('53300', 'sorry, too many clients already'), 'destination')).toMatchObject({ code: 'destination_unavailable', retryable: true });
    expect(classifyError(pgError('57P01', 'terminating connection due to administrator command'), 'source')).toMatchObject({ code: 'source_unavailable', retryable: true });
    expect(classifyError(pgError('08006'), 'check')).toMatchObject({ code: 'unavailable', retryable: true });
    expect(classifyError(pgError('57014', 'canceling statement due to statement timeout'), 'source')).toMatchObject({ code: 'timeout', retryable: true });
    expect(classifyError(pgError('ECONNRESET', 'read ECONNRESET'), 'destination')).toMatchObject({ code: 'destination_unavailable', retryable: true });
    expect(classifyError(new Error('Connection terminated due to connection timeout'), 'check')).toMatchObject({ code: 'timeout', retryable: true });
    expect(classifyError(new Error('Connection terminated unexpectedly'), 'source')).toMatchObject({ code: 'source_unavailable', retryable: true });
  });

  it('stops on authentication and configuration problems', () => {
    expect(classifyError(pgError('28P01'), 'source')).toMatchObject({ code: 'auth_failed', retryable: false });
    expect(classifyError(pgError('28000'), 'destination')).toMatchObject({ code: 'auth_failed', retryable: false });
    expect(classifyError(pgError('3D000'), 'check')).toMatchObject({ code: 'database_not_found', retryable: false });
    expect(classifyError(pgError('42P01', 'relation "x" does not exist'), 'source')).toMatchObject({ code: 'table_not_found', retryable: false });
    expect(classifyError(pgError('42703', 'column "y" does not exist'), 'check')).toMatchObject({ code: 'column_not_found', retryable: false });
    expect(classifyError(pgError('42601', 'syntax error at or near "FORM"'), 'source')).toMatchObject({ code: 'query_failed', retryable: false });
  });

  it('stops on TLS failures: a certificate that does not verify, a server without TLS', () => {
    for (const code of ['DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'CERT_HAS_EXPIRED', 'ERR_TLS_CERT_ALTNAME_INVALID']) {
      expect(classifyError(pgError(code, 'certificate trouble'), 'source')).toMatchObject({ code: 'tls_failed', retryable: false });
    }
    expect(classifyError(new Error('The server does not support SSL connections'), 'check')).toMatchObject({ code: 'tls_failed', retryable: false });
    expect(classifyError(Object.assign(new Error('connect ECONNRESET'), { code: 'ECONNRESET' }), 'source')).toMatchObject({ retryable: true });
  });

  it('never repeats a connection string from an unknown error', () => {
    const error = classifyError(new Error('could not parse postgres://u:hunter2@h/db'), 'check');
    expect(error).toBeInstanceOf(ConnectorError);
    expect(error.message).not.toContain('hunter2');
  });

  it('tells a row error from the rest', () => {
    expect(['22P02', '23502', '23505', '23514', '54000'].map((c) => isRecordError(pgError(c)))).toEqual([true, true, true, true, true]);
    expect(['28P01', '42P01', '08006'].map((c) => isRecordError(pgError(c)))).toEqual([false, false, false]);
  });
});

describe('postgres client config', () => {
  const outbound = createConnectorOutbound();
  it('names the sessions, sets the statement timeout and passes TLS as node expects', () => {
    const config = clientConfig({ host: 'db', database: 'app', user: 'u', password: 'p', ssl: { ca: 'PEM' }, statement_timeout_ms: 5000 }, { connectTimeoutMs: 1000, outbound });
    expect(config).toMatchObject({ application_name: 'ferry', statement_timeout: 5000, port: 5432, ssl: { ca: 'PEM', rejectUnauthorized: true }, connectionTimeoutMillis: 1000 });
    expect(clientConfig({ connection_string: 'postgres://h/db' }, { connectTimeoutMs: 1000, outbound })).not.toHaveProperty('ssl');
    expect(clientConfig({ connection_string: 'postgres://h/db', ssl: { reject_unauthorized: false } }, { connectTimeoutMs: 1000, outbound }).ssl).toEqual({ rejectUnauthorized: false });
  });
});

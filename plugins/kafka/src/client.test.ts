import { describe, expect, it } from 'vitest';
import { classifyError } from './client.js';

const connectionError = (message: string, code?: string) => Object.assign(new Error(message), { name: 'KafkaJSConnectionError', code });

describe('classifyError', () => {
  it('calls a TLS failure fatal by the socket code only, so a reset during a handshake or an unresolved host stays retryable', () => {
    expect(classifyError(connectionError('Connection error: self-signed certificate', 'DEPTH_ZERO_SELF_SIGNED_CERT'), 'check')).toMatchObject({ code: 'tls_failed', retryable: false });
    expect(classifyError(connectionError('Connection error: Hostname/IP does not match certificate', 'ERR_TLS_CERT_ALTNAME_INVALID'), 'check')).toMatchObject({ code: 'tls_failed', retryable: false });
    expect(classifyError(connectionError('Connection error: Client network socket disconnected before secure TLS connection was established', 'ECONNRESET'), 'destination')).toMatchObject({
      code: 'destination_unavailable',
      retryable: true,
    });
    expect(classifyError(connectionError('Connection error: getaddrinfo ENOTFOUND kafka-ssl-1.internal', 'ENOTFOUND'), 'source')).toMatchObject({ code: 'source_unavailable', retryable: true });
    expect(classifyError(connectionError('Connection error: connect ECONNREFUSED 127.0.0.1:9093', 'ECONNREFUSED'), 'source')).toMatchObject({ code: 'connection_refused', retryable: true });
  });

  it("unwraps kafkajs's retries, and takes the broker's UNKNOWN server error as transient", () => {
    const unknown = Object.assign(new Error('The server experienced an unexpected error when processing the request'), { name: 'KafkaJSProtocolError', type: 'UNKNOWN', retriable: false });
    const wrapped = Object.assign(new Error('retries exceeded'), { name: 'KafkaJSNumberOfRetriesExceeded', cause: unknown });
    expect(classifyError(wrapped, 'destination')).toMatchObject({ code: 'destination_unavailable', retryable: true });
    const tooLarge = Object.assign(new Error('too large'), { name: 'KafkaJSProtocolError', type: 'MESSAGE_TOO_LARGE', retriable: false });
    expect(classifyError(tooLarge, 'destination')).toMatchObject({ code: 'record_rejected', retryable: false });
  });
});

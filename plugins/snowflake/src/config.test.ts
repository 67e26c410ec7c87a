import { createConnectorOutbound } from '@ferry/core/internal';
import { describe, expect, it } from 'vitest';
import { validateSnowflakeConfig, type SnowflakeConfig } from './config.js';

/** Validation as an engine allowing 127.0.0.1 runs it. */
const codes = (config: SnowflakeConfig, direction: 'source' | 'destination') => validateSnowflakeConfig(config, direction, createConnectorOutbound({ allow: ['127.0.0.1'] })).map((p) => `${p.pointer} ${p.code}`);
const base = { account: 'myorg-acct', username: 'loader', password: 'pw' };
const key = '-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n';
const encrypted = '-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIE\n-----END ENCRYPTED PRIVATE KEY-----\n';

describe('validateSnowflakeConfig', () => {
  it('accepts a destination and a source with what they need', () => {
    expect(codes({ ...base, table: 'analytics.public.events' }, 'destination')).toEqual([]);
    expect(codes({ ...base, table: 'orders', cursor_column: 'seq', type_column: 'kind', occurred_at_column: 'at' }, 'source')).toEqual([]);
    expect(codes({ ...base, query: 'SELECT 1 AS seq', cursor_column: 'seq', type: 't' }, 'source')).toEqual([]);
  });

  it('needs exactly one way to log in, and a passphrase only with an encrypted key', () => {
    expect(codes({ account: 'a', username: 'u', table: 't' }, 'destination')).toEqual(['/password required']);
    expect(codes({ ...base, private_key: key, table: 't' }, 'destination')).toEqual(['/private_key conflict']);
    expect(codes({ account: 'a', username: 'u', private_key: key, table: 't' }, 'destination')).toEqual([]);
    expect(codes({ account: 'a', username: 'u', private_key: encrypted, table: 't' }, 'destination')).toEqual(['/private_key_passphrase required']);
    expect(codes({ account: 'a', username: 'u', private_key: encrypted, private_key_passphrase: 'x', table: 't' }, 'destination')).toEqual([]);
    expect(codes({ ...base, private_key_passphrase: 'x', table: 't' }, 'destination')).toEqual(['/private_key_passphrase not_applicable']);
    expect(codes({ account: 'a', username: 'u', private_key: 'ssh-rsa AAAA', table: 't' }, 'destination')).toEqual(['/private_key format']);
  });

  it('refuses names that are not plain identifiers, and a URL that is not http(s)', () => {
    expect(codes({ ...base, table: 'a.b.c.d' }, 'destination')).toEqual(['/table invalid_identifier']);
    expect(codes({ ...base, table: 'my table' }, 'destination')).toEqual(['/table invalid_identifier']);
    expect(codes({ ...base, table: 't', cursor_column: 'se"q', type: 't' }, 'source')).toEqual(['/cursor_column invalid_identifier']);
    expect(codes({ ...base, table: 't', access_url: 'ftp://x' }, 'destination')).toEqual(['/access_url format']);
    // A password must not cross a network in clear: http:// only to a host the engine allows.
    expect(codes({ ...base, table: 't', access_url: 'http://myorg-acct.snowflakecomputing.com' }, 'destination')).toEqual(['/access_url url_not_allowed']);
    expect(codes({ ...base, table: 't', access_url: 'https://myorg-acct.privatelink.snowflakecomputing.com' }, 'destination')).toEqual([]);
    expect(codes({ ...base, table: 't', access_url: 'http://127.0.0.1:8080' }, 'destination')).toEqual([]);
  });

  it('says what each direction lacks', () => {
    expect(codes({ ...base }, 'destination')).toEqual(['/table required']);
    expect(codes({ ...base, table: 't', query: 'SELECT 1' }, 'destination')).toEqual(['/query not_applicable']);
    expect(codes({ ...base }, 'source')).toEqual(['/table required', '/cursor_column required', '/type required']);
    expect(codes({ ...base, table: 't', query: 'SELECT 1', cursor_column: 'c', type: 't' }, 'source')).toEqual(['/query conflict']);
  });
});

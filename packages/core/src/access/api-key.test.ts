import { createHash } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import {
  API_KEY_SCOPES,
  type ApiKeyScope,
  apiKeyChecksum,
  generateApiKey,
  hashApiKeySecret,
  isApiKeyScope,
  parseApiKey,
  scopeAllows,
  verifyApiKeySecret,
} from './api-key.js';

const TOKEN_REGEX = /^fry_[0-9A-Za-z]{8}_[0-9A-Za-z]{38}$/;
const ALPHABET = [
  ...Array.from({ length: 10 }, (_, i) => String.fromCharCode(48 + i)),
  ...Array.from({ length: 26 }, (_, i) => String.fromCharCode(65 + i)),
  ...Array.from({ length: 26 }, (_, i) => String.fromCharCode(97 + i)),
].join('');

/** An independent base62 encoder (BigInt, repeated division), to cross-check apiKeyChecksum. */
function referenceBase62(value: number, width: number): string {
  let n = BigInt(value);
  const digits: string[] = [];
  for (let i = 0; i < width; i += 1) {
    digits.unshift(ALPHABET[Number(n % 62n)] as string);
    n /= 62n;
  }
  expect(n).toBe(0n);
  return digits.join('');
}

/** Bitwise CRC32 (IEEE, reflected polynomial 0xEDB88320), independent of zlib. */
function referenceCrc32(text: string): number {
  let crc = 0xffffffff;
  for (const byte of Buffer.from(text, 'utf8')) {
    crc ^= byte;
    for (let bit = 0; bit < 8; bit += 1) crc = crc & 1 ? (crc >>> 1) ^ 0xedb88320 : crc >>> 1;
  }
  return (crc ^ 0xffffffff) >>> 0;
}

describe('generateApiKey', () => {
  it('produces well-formed tokens whose parts agree', () => {
    for (let i = 0; i < 200; i += 1) {
      const key = generateApiKey();
      expect(key.token).toMatch(TOKEN_REGEX);
      expect(key.token.startsWith(`fry_${key.keyId}_`)).toBe(true);
      expect(key.last4).toBe(key.token.slice(-4));
      const parsed = parseApiKey(key.token);
      expect(parsed).not.toBeNull();
      expect(parsed?.keyId).toBe(key.keyId);
      expect(parsed?.secret).toHaveLength(32);
      expect(key.token).toBe(`fry_${key.keyId}_${parsed?.secret}${apiKeyChecksum(key.token.slice(0, 45))}`);
      expect(key.secretHash).toBe(createHash('sha256').update(parsed?.secret ?? '').digest('hex'));
      expect(verifyApiKeySecret(parsed?.secret ?? '', key.secretHash)).toBe(true);
    }
  });

  it('is random and uses the whole alphabet roughly uniformly', () => {
    const counts = new Map<string, number>();
    const tokens = new Set<string>();
    const rounds = 2000;
    for (let i = 0; i < rounds; i += 1) {
      const { token } = generateApiKey();
      tokens.add(token);
      // Only the random part: key id and secret.
      for (const char of token.slice(4, 12) + token.slice(13, 45)) counts.set(char, (counts.get(char) ?? 0) + 1);
    }
    expect(tokens.size).toBe(rounds);
    expect(counts.size).toBe(62);
    // 80,000 draws: each character expects ~1290 (sd ~36); a modulo bias or a missing char is far outside.
    const expected = (rounds * 40) / 62;
    for (const count of counts.values()) {
      expect(count).toBeGreaterThan(expected * 0.85);
      expect(count).toBeLessThan(expected * 1.15);
    }
  });
});

describe('apiKeyChecksum', () => {
  it('matches a hand-computed CRC32 in base62 (known answer)', () => {
    const body = 'fry_AbCd1234_0123456789abcdefghijABCDEFGHIJxy';
    const crc = crc32(body);
    expect(crc).toBe(referenceCrc32(body));
    expect(crc).toBe(2823051164);
    expect(referenceBase62(crc, 6)).toBe('353EZI');
    expect(apiKeyChecksum(body)).toBe('353EZI');
    expect(parseApiKey(body + referenceBase62(crc, 6))).toEqual({
      keyId: 'AbCd1234',
      secret: '0123456789abcdefghijABCDEFGHIJxy',
    });
  });

  it('pins a fixed value so a change of algorithm or alphabet is noticed', () => {
    // CRC32('hello') = 907060870 = 61*62^4 + 23*62^3 + 57*62^2 + 60*62 + 2 -> 'z','N','v','y','2'.
    expect(crc32('hello')).toBe(907060870);
    expect(referenceBase62(907060870, 6)).toBe('0zNvy2');
    expect(apiKeyChecksum('hello')).toBe('0zNvy2');
    expect(apiKeyChecksum('')).toBe('000000');
  });

  it('pads small values and handles the largest CRC', () => {
    // The largest CRC needs 6 digits; the smallest pads to 6.
    expect(referenceBase62(0xffffffff, 6)).toBe('4gfFC3');
    for (let i = 0; i < 500; i += 1) {
      const body = `fry_${String(i).padStart(8, '0')}_${'x'.repeat(32)}`;
      expect(apiKeyChecksum(body)).toBe(referenceBase62(crc32(body), 6));
    }
  });
});

describe('parseApiKey', () => {
  it('rejects every single-character change anywhere in a valid token', () => {
    for (let round = 0; round < 3; round += 1) {
      const { token } = generateApiKey();
      for (let index = 0; index < token.length; index += 1) {
        for (const replacement of ALPHABET + '_') {
          if (replacement === token[index]) continue;
          const changed = token.slice(0, index) + replacement + token.slice(index + 1);
          expect(parseApiKey(changed), `${index} -> ${replacement}`).toBeNull();
        }
      }
    }
  });

  it('rejects wrong prefixes, lengths and characters', () => {
    const { token } = generateApiKey();
    const body = token.slice(0, 45);
    const bad = [
      '',
      'fry_',
      token.slice(0, -1),
      `${token}0`,
      `x${token}`,
      token.replace('fry_', 'FRY_'),
      token.replace('fry_', 'fri_'),
      token.replace('fry_', 'fry-'),
      ` ${token}`,
      `${token} `,
      `${token}\n`,
      `Bearer ${token}`,
      token.slice(0, 12) + '-' + token.slice(13),
      // Right checksum, wrong characters: the shape check must refuse them on its own.
      `fry_AbCd-234_${'a'.repeat(32)}`,
      `fry_AbCd1234_${'a'.repeat(31)}é`,
      `fry_AbCd123_${'a'.repeat(33)}`,
      `fry_AbCd12345_${'a'.repeat(31)}`,
    ].map((candidate) => (candidate.length === 45 ? candidate + apiKeyChecksum(candidate) : candidate));
    for (const candidate of bad) expect(parseApiKey(candidate), candidate).toBeNull();
    expect(parseApiKey(body + apiKeyChecksum(body))).not.toBeNull();
    expect(parseApiKey(undefined as unknown as string)).toBeNull();
    expect(parseApiKey(42 as unknown as string)).toBeNull();
  });
});

describe('hashApiKeySecret / verifyApiKeySecret', () => {
  const secret = 'abcdefghijABCDEFGHIJ0123456789xy';
  const hash = hashApiKeySecret(secret);

  it('hashes to hex SHA-256', () => {
    expect(hash).toBe(createHash('sha256').update(secret).digest('hex'));
    expect(hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('verifies the right secret and refuses others', () => {
    expect(verifyApiKeySecret(secret, hash)).toBe(true);
    expect(verifyApiKeySecret(secret, hash.toUpperCase())).toBe(true);
    expect(verifyApiKeySecret(`${secret.slice(0, -1)}z`, hash)).toBe(false);
    expect(verifyApiKeySecret('', hash)).toBe(false);
    expect(verifyApiKeySecret(secret, hashApiKeySecret('other'))).toBe(false);
  });

  it('refuses malformed stored hashes without throwing', () => {
    for (const stored of ['', hash.slice(0, 62), `${hash}00`, `${hash.slice(0, 63)}g`, secret, 'zz'.repeat(32)]) {
      expect(verifyApiKeySecret(secret, stored)).toBe(false);
    }
    expect(verifyApiKeySecret(secret, '0'.repeat(64))).toBe(false);
  });
});

describe('scopes', () => {
  it('lists the documented scopes and recognises them', () => {
    expect([...API_KEY_SCOPES].sort()).toEqual(
      [
        'connectors:read',
        'connectors:write',
        'pipelines:read',
        'pipelines:write',
        'events:read',
        'events:write',
        'webhooks:read',
        'webhooks:write',
        'connectors:rotate',
        'events:replay',
        'read',
        'write',
      ].sort(),
    );
    const scope: ApiKeyScope = 'events:replay';
    expect(isApiKeyScope(scope)).toBe(true);
    expect(isApiKeyScope('admin')).toBe(false);
    expect(isApiKeyScope('pipelines:rotate')).toBe(false);
    expect(isApiKeyScope(undefined)).toBe(false);
  });

  const resources = ['connectors', 'pipelines', 'events', 'webhooks'] as const;
  const reads = resources.map((r) => `${r}:read`);
  const writes = resources.map((r) => `${r}:write`);

  // [granted, required, allowed]
  const table: Array<[readonly string[], string, boolean]> = [
    // write grants everything
    ...API_KEY_SCOPES.map((required): [string[], string, boolean] => [['write'], required, true]),
    // read grants every :read and nothing else
    ...reads.map((required): [string[], string, boolean] => [['read'], required, true]),
    ...writes.map((required): [string[], string, boolean] => [['read'], required, false]),
    [['read'], 'connectors:rotate', false],
    [['read'], 'events:replay', false],
    [['read'], 'read', true],
    [['read'], 'write', false],
    // <resource>:write grants its own write and read, nothing of other resources
    ...resources.flatMap((resource): Array<[string[], string, boolean]> => [
      [[`${resource}:write`], `${resource}:write`, true],
      [[`${resource}:write`], `${resource}:read`, true],
      ...resources
        .filter((other) => other !== resource)
        .flatMap((other): Array<[string[], string, boolean]> => [
          [[`${resource}:write`], `${other}:read`, false],
          [[`${resource}:write`], `${other}:write`, false],
        ]),
      [[`${resource}:write`], 'read', false],
      [[`${resource}:write`], 'write', false],
    ]),
    // <resource>:read grants only itself
    [['pipelines:read'], 'pipelines:read', true],
    [['pipelines:read'], 'pipelines:write', false],
    [['pipelines:read'], 'events:read', false],
    // rotate
    [['connectors:rotate'], 'connectors:rotate', true],
    [['connectors:write'], 'connectors:rotate', true],
    [['connectors:read'], 'connectors:rotate', false],
    [['pipelines:write'], 'connectors:rotate', false],
    [['events:replay'], 'connectors:rotate', false],
    [['connectors:rotate'], 'connectors:read', false],
    [['connectors:rotate'], 'connectors:write', false],
    // replay
    [['events:replay'], 'events:replay', true],
    [['events:write'], 'events:replay', true],
    [['events:read'], 'events:replay', false],
    [['connectors:write'], 'events:replay', false],
    [['events:replay'], 'events:read', false],
    [['events:replay'], 'events:write', false],
    // combinations and edge cases
    [['pipelines:read', 'events:write'], 'events:read', true],
    [['pipelines:read', 'events:write'], 'pipelines:write', false],
    [[], 'pipelines:read', false],
    [['admin', 'pipelines:*', '*'], 'pipelines:read', false],
    [['write'], 'admin', false],
    [['write'], 'pipelines:rotate', false],
    [['write'], '', false],
    [['pipelines:write'], 'pipelines:admin', false],
    [['Write'], 'pipelines:read', false],
  ];

  it.each(table)('%j grants %s: %s', (granted, required, allowed) => {
    expect(scopeAllows(granted, required)).toBe(allowed);
  });
});

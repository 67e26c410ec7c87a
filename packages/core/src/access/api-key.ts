import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { crc32 } from 'node:zlib';

/**
 * Every scope an API key can hold (docs/api.md, API keys): per-resource `read` / `write`, the two
 * special actions `connectors:rotate` and `events:replay`, and the shorthands `read` and `write`.
 * See {@link scopeAllows} for what each one grants.
 */
export const API_KEY_SCOPES = [
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
] as const;

/** One of {@link API_KEY_SCOPES}. */
export type ApiKeyScope = (typeof API_KEY_SCOPES)[number];

/** A freshly generated key: the token is shown to the user once; the rest is what gets stored. */
export interface GeneratedApiKey {
  /** The full bearer token, `fry_<keyId>_<secret><checksum>`. Never stored. */
  token: string;
  /** The 8-character public key id embedded in the token (not the `key_` resource id). */
  keyId: string;
  /** Hex SHA-256 of the 32-character secret, for {@link verifyApiKeySecret}. */
  secretHash: string;
  /** Last 4 characters of the whole token, so users can tell their keys apart in listings. */
  last4: string;
}

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const PREFIX = 'fry_';
const KEY_ID_LENGTH = 8;
const SECRET_LENGTH = 32;
const CHECKSUM_LENGTH = 6;
const BODY_LENGTH = PREFIX.length + KEY_ID_LENGTH + 1 + SECRET_LENGTH;
const TOKEN_SHAPE = /^fry_([0-9A-Za-z]{8})_([0-9A-Za-z]{32})([0-9A-Za-z]{6})$/;
const SHA256_HEX = /^[0-9a-fA-F]{64}$/;
const SCOPE_SET: ReadonlySet<string> = new Set(API_KEY_SCOPES);

/** True when `value` is one of {@link API_KEY_SCOPES}; for validating scopes given at key creation. */
export function isApiKeyScope(value: unknown): value is ApiKeyScope {
  return typeof value === 'string' && SCOPE_SET.has(value);
}

/**
 * Generates a new API key. Key id and secret are uniform over the 62-character alphabet
 * (about 190 bits of entropy in the secret).
 */
export function generateApiKey(): GeneratedApiKey {
  const keyId = randomBase62(KEY_ID_LENGTH);
  const secret = randomBase62(SECRET_LENGTH);
  const body = `${PREFIX}${keyId}_${secret}`;
  const token = body + apiKeyChecksum(body);
  return { token, keyId, secretHash: hashApiKeySecret(secret), last4: token.slice(-4) };
}

/**
 * The 6-character checksum that ends a token: CRC32 (IEEE) of `body` (`fry_<keyId>_<secret>`)
 * in base62, left-padded with `0`. It lets secret scanners and the server reject mistyped or
 * made-up tokens without a storage lookup; it is not a security measure (CRC32 is public).
 */
export function apiKeyChecksum(body: string): string {
  // 62^6 > 2^32, so six digits always suffice.
  let value = crc32(body) >>> 0;
  let digits = '';
  do {
    digits = ALPHABET.charAt(value % 62) + digits;
    value = Math.floor(value / 62);
  } while (value > 0);
  return digits.padStart(CHECKSUM_LENGTH, '0');
}

/**
 * Splits a bearer token into key id and secret, or returns null when its shape or checksum is
 * wrong. Cheap and storage-free, so junk tokens are turned away before any lookup. A non-null
 * result says nothing about whether the key exists: that is {@link verifyApiKeySecret}'s job.
 */
export function parseApiKey(token: string): { keyId: string; secret: string } | null {
  if (typeof token !== 'string') return null;
  const match = TOKEN_SHAPE.exec(token);
  if (match === null) return null;
  const [, keyId, secret, checksum] = match as unknown as [string, string, string, string];
  if (apiKeyChecksum(token.slice(0, BODY_LENGTH)) !== checksum) return null;
  return { keyId, secret };
}

/**
 * Hex SHA-256 of a key secret, the only form in which it is stored. A plain hash is enough
 * (no salt or slow KDF): the secret is 190 random bits, out of reach of guessing either way.
 */
export function hashApiKeySecret(secret: string): string {
  return hash('sha256', secret, 'hex');
}

/**
 * True when `secret` hashes to `storedHashHex`, compared in constant time. A malformed stored
 * hash gives false, yet the comparison still runs, so timing reveals nothing about the secret.
 */
export function verifyApiKeySecret(secret: string, storedHashHex: string): boolean {
  // The one-shot hash: every authenticated request runs this, and it skips a Hash object.
  const actual = hash('sha256', String(secret), 'buffer');
  const wellFormed = typeof storedHashHex === 'string' && SHA256_HEX.test(storedHashHex);
  const expected = wellFormed ? Buffer.from(storedHashHex, 'hex') : Buffer.alloc(actual.length);
  const same = timingSafeEqual(actual, expected);
  return wellFormed && same;
}

/**
 * Whether a key holding `granted` may do what needs `required`.
 *
 * - `write` grants every scope: all reads, all writes, `connectors:rotate`, `events:replay` and `read`.
 * - `read` grants every `<resource>:read`.
 * - `<resource>:write` grants `<resource>:write` and `<resource>:read`: an API that lets a key
 *   change something it cannot look at would only invite blind writes.
 * - `connectors:rotate` is granted by itself, `connectors:write` or `write`, because whoever may
 *   replace a connector's config may replace its credentials.
 * - `events:replay` is granted by itself, `events:write` or `write`, because replaying only
 *   re-submits events the key could have written.
 * - `connectors:rotate` and `events:replay` alone do not grant reads: they exist to hand automation
 *   exactly one action.
 *
 * Fails closed: a `required` scope outside {@link API_KEY_SCOPES} is never granted, and unknown
 * entries in `granted` grant nothing.
 */
export function scopeAllows(granted: readonly string[], required: string): boolean {
  if (!SCOPE_SET.has(required)) return false;
  const has = (scope: string): boolean => granted.includes(scope);
  if (has('write') || has(required)) return true;
  const separator = required.indexOf(':');
  if (separator < 0) return false; // `read` is only granted by itself or `write`
  const resource = required.slice(0, separator);
  const action = required.slice(separator + 1);
  switch (action) {
    case 'read':
      return has('read') || has(`${resource}:write`);
    case 'rotate':
    case 'replay':
      return has(`${resource}:write`);
    default:
      return false;
  }
}

/**
 * Uniform random characters of {@link ALPHABET}. Rejection sampling: 6 random bits give 0..63 and
 * 62 and 63 are dropped, since folding them into the alphabet (a modulo) would favour some characters.
 */
function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    // Draw a little extra so one call almost always suffices (acceptance is 62/64).
    for (const byte of randomBytes(length - out.length + 4)) {
      const value = byte & 0x3f;
      if (value < 62) out += ALPHABET.charAt(value);
      if (out.length === length) break;
    }
  }
  return out;
}

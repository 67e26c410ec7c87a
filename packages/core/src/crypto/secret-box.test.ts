import { createHash, randomBytes } from 'node:crypto';
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { FerryError } from '../common/index.js';
import { SecretBox, generateSecretKey, parseSecretKey } from './secret-box.js';

const KEY = Buffer.from('000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f', 'hex');
const AAD = 'con_01JTEST:password';

function expectOpenFailure(fn: () => unknown): void {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(FerryError);
  expect((caught as FerryError).code).toBe('internal');
  expect((caught as FerryError).message).toMatch(/^secret could not be decrypted/);
}

/**
 * Replaces the character at `index` with the base64url character whose value differs in the lowest
 * bit only. On the last character of a segment that bit may be unused padding, which a lenient
 * decoder would ignore; the box must still refuse the edited string.
 */
function flip(text: string, index: number): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  const current = text[index] ?? '';
  const replacement = alphabet[alphabet.indexOf(current) ^ 1] ?? '';
  return text.slice(0, index) + replacement + text.slice(index + 1);
}

const B64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** The same bytes, spelled with the unused low bits of the 43rd character set (lenient decoders accept it). */
function nonCanonical(encoded: string): string {
  const alphabet = encoded.includes('-') || encoded.includes('_') ? B64URL : B64URL.replace('-_', '+/');
  const last = encoded[42] ?? '';
  return `${encoded.slice(0, 42)}${alphabet[alphabet.indexOf(last) + 1] ?? ''}${encoded.slice(43)}`;
}

describe('parseSecretKey', () => {
  it('accepts raw bytes, hex, base64 and base64url of the same key as the same bytes', () => {
    // 0xfb 0xff ... makes the base64 and base64url spellings differ ('+/' versus '-_').
    const key = Buffer.concat([Buffer.from([0xfb, 0xff, 0xbf]), randomBytes(29)]);
    const spellings: Array<string | Uint8Array> = [
      key,
      new Uint8Array(key),
      key.toString('hex'),
      key.toString('hex').toUpperCase(),
      key.toString('base64'),
      key.toString('base64').replace(/=$/, ''),
      key.toString('base64url'),
      `${key.toString('base64url')}=`,
      `  ${key.toString('base64url')}\n`,
    ];
    expect(key.toString('base64')).toMatch(/[+/]/);
    for (const spelling of spellings) expect(parseSecretKey(spelling).equals(key)).toBe(true);
  });

  it('lenient decoding would accept the non-canonical spelling, so the check is meaningful', () => {
    expect(Buffer.from(nonCanonical(KEY.toString('base64url')), 'base64url').equals(KEY)).toBe(true);
  });

  it('returns a copy, not the caller buffer', () => {
    const key = Buffer.from(KEY);
    const parsed = parseSecretKey(key);
    key.fill(0);
    expect(parsed.equals(KEY)).toBe(true);
  });

  it('round-trips generateSecretKey', () => {
    const text = generateSecretKey();
    expect(text).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(parseSecretKey(text)).toHaveLength(32);
    expect(generateSecretKey()).not.toBe(text);
  });

  it('rejects 31 and 33 bytes in every encoding, and garbage, without echoing the input', () => {
    const bad: Array<string | Uint8Array> = [];
    for (const length of [0, 31, 33, 64]) {
      const bytes = randomBytes(length);
      bad.push(bytes, bytes.toString('hex'), bytes.toString('base64'), bytes.toString('base64url'));
    }
    const valid = randomBytes(32).toString('base64url');
    bad.push(
      'not a key at all',
      'z'.repeat(64), // right length for hex, wrong alphabet
      `${KEY.toString('hex')}00`,
      `${valid.slice(0, 20)}!${valid.slice(21)}`,
      `${valid}==`,
      // Mixed alphabets: a mangled copy, not a key.
      `+-${valid.slice(2)}`,
      nonCanonical(KEY.toString('base64url')),
      nonCanonical(KEY.toString('base64')),
    );
    for (const input of bad) {
      let caught: unknown;
      try {
        parseSecretKey(input);
      } catch (error) {
        caught = error;
      }
      expect(caught, inspect(input)).toBeInstanceOf(FerryError);
      expect((caught as FerryError).code).toBe('configuration_invalid');
      if (typeof input === 'string' && input.trim().length > 3) {
        expect((caught as FerryError).message).not.toContain(input.trim());
      }
    }
  });
});

describe('SecretBox', () => {
  const box = new SecretBox(KEY);

  it('derives keyId from SHA-256 of the key', () => {
    expect(box.keyId).toBe(createHash('sha256').update(KEY).digest('hex').slice(0, 8));
    expect(box.keyId).toMatch(/^[0-9a-f]{8}$/);
  });

  it('rejects keys that are not 32 bytes', () => {
    expect(() => new SecretBox(Buffer.alloc(31))).toThrow(FerryError);
    expect(() => new SecretBox(Buffer.alloc(33))).toThrow(FerryError);
  });

  it('round-trips ascii, unicode, empty and long plaintexts', () => {
    const samples = ['hunter2', '', 'pässwörd 🔑 密码 \u0000 end', '-----BEGIN KEY-----\n'.repeat(500)];
    for (const plaintext of samples) {
      const sealed = box.seal(plaintext, AAD);
      expect(sealed).toMatch(/^v1\.[0-9a-f]{8}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
      expect(box.open(sealed, AAD)).toBe(plaintext);
    }
  });

  it('opens with another box built from the same key', () => {
    expect(new SecretBox(Buffer.from(KEY)).open(box.seal('x', AAD), AAD)).toBe('x');
  });

  it('gives a different ciphertext on every seal', () => {
    const outputs = new Set(Array.from({ length: 20 }, () => box.seal('same', AAD)));
    expect(outputs.size).toBe(20);
    const wrappedDeks = new Set([...outputs].map((sealed) => sealed.split('.')[2]));
    expect(wrappedDeks.size).toBe(20);
  });

  it('does not leak the plaintext into the sealed form', () => {
    const sealed = box.seal('hunter2-plaintext', AAD);
    expect(sealed).not.toContain('hunter2');
    expect(sealed).not.toContain(Buffer.from('hunter2').toString('base64url').slice(0, 8));
  });

  it('fails when any character of any segment is changed', () => {
    // Lengths 1, 2 and 3 modulo 3 exercise base64url segments with 0, 4 and 2 unused trailing bits.
    for (const plaintext of ['a', 'ab', 'abc', 'secret value']) {
      const sealed = box.seal(plaintext, AAD);
      for (let index = 0; index < sealed.length; index += 1) {
        if (sealed[index] === '.') continue;
        expectOpenFailure(() => box.open(flip(sealed, index), AAD));
      }
    }
  });

  it('fails on malformed input and unknown versions', () => {
    const sealed = box.seal('value', AAD);
    const [, keyId, wrapped, data] = sealed.split('.');
    const malformed = [
      '',
      'v1',
      'plaintext',
      `v2.${keyId}.${wrapped}.${data}`,
      `V1.${keyId}.${wrapped}.${data}`,
      `v1.${keyId}.${wrapped}`,
      `v1.${keyId}.${wrapped}.${data}.`,
      `v1.${keyId}.${wrapped}.${data}.extra`,
      `v1.${keyId}..${data}`,
      `v1.${keyId}.${wrapped}.`,
      `v1.${keyId}.${wrapped}.${data}=`,
      `v1.${keyId}.${wrapped}.${data}A`,
      `v1.${keyId}.${wrapped}.${data?.slice(0, -1)}`,
      `v1.${keyId}.${wrapped}.${data?.slice(0, 20)}`,
      `v1.${keyId}.${wrapped?.slice(0, -4)}.${data}`,
      `v1.${keyId}.${wrapped}AAAA.${data}`,
      `v1.${keyId}.${data}.${wrapped}`,
      `v1.${keyId}.${wrapped}.${data?.replace(/[A-Za-z]/, '+')}`,
      ` ${sealed}`,
      `${sealed}\n`,
    ];
    for (const input of malformed) expectOpenFailure(() => box.open(input, AAD));
    expectOpenFailure(() => box.open(undefined as unknown as string, AAD));
  });

  it('fails with the wrong aad', () => {
    const sealed = box.seal('value', AAD);
    for (const aad of ['', `${AAD} `, 'con_01JOTHER:password', AAD.toUpperCase()]) {
      expectOpenFailure(() => box.open(sealed, aad));
    }
    expectOpenFailure(() => box.open(box.seal('value', ''), 'x'));
  });

  it('does not let the key id and aad be re-split', () => {
    // AAD of the wrapped DEK is keyId + aad; a fixed-length keyId keeps that unambiguous.
    const sealed = box.seal('value', 'ab');
    expectOpenFailure(() => box.open(sealed, 'b'));
  });

  it('fails with the wrong key, including under a forged key id', () => {
    const other = new SecretBox(randomBytes(32));
    const sealed = box.seal('value', AAD);
    expectOpenFailure(() => other.open(sealed, AAD));
    const forged = sealed.replace(`.${box.keyId}.`, `.${other.keyId}.`);
    expectOpenFailure(() => other.open(forged, AAD));
  });

  it('keeps plaintext and key material out of error messages and inspection', () => {
    const sealed = box.seal('hunter2', AAD);
    try {
      box.open(sealed, 'wrong');
      expect.unreachable();
    } catch (error) {
      const text = `${(error as Error).message} ${inspect(error)}`;
      expect(text).not.toContain('hunter2');
      expect(text).not.toContain(KEY.toString('hex'));
    }
    const shown = `${inspect(box, { depth: 5, showHidden: true })} ${JSON.stringify(box)}`;
    expect(shown).not.toContain(KEY.toString('hex'));
    expect(shown).not.toContain('0, 1, 2, 3, 4');
  });

  it('deriveKey is stable, 32 bytes, different per label and per key, never the key itself', () => {
    const cursors = box.deriveKey('cursor-signing');
    expect(cursors).toHaveLength(32);
    expect(box.deriveKey('cursor-signing').equals(cursors)).toBe(true);
    expect(new SecretBox(Buffer.from(KEY)).deriveKey('cursor-signing').equals(cursors)).toBe(true);
    expect(box.deriveKey('cursor-signing-2').equals(cursors)).toBe(false);
    expect(box.deriveKey('').equals(cursors)).toBe(false);
    expect(new SecretBox(randomBytes(32)).deriveKey('cursor-signing').equals(cursors)).toBe(false);
    expect(cursors.equals(KEY)).toBe(false);
    const labels = ['a', 'b', 'webhook', 'idempotency', 'cursor'];
    const derived = new Set(labels.map((label) => box.deriveKey(label).toString('hex')));
    expect(derived.size).toBe(labels.length);
  });
});

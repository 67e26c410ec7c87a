import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { FerryError } from '../common/index.js';
import { generateWebhookSecret } from './webhook-secret.js';
import { signWebhook, verifyWebhook, webhookHeaders, WebhookVerificationError, type VerifyWebhookOptions } from './webhook-signature.js';

// The Standard Webhooks known-answer vector (the reference libraries' "sign function works").
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const ID = 'msg_p5jXN8AQM9LWM0D4loKWxJek';
const TS = 1614265330;
const BODY = '{"test": 2432232314}';
const SIGNATURE = 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=';
const NOW = TS * 1000;
const TOLERANCE_MS = 300_000;

type Headers = Record<string, string | undefined>;

/** What verification threw: the reason of a rejection, or the code of a configuration error. */
function outcome(fn: () => unknown): string {
  try {
    fn();
    return 'accepted';
  } catch (error) {
    if (error instanceof WebhookVerificationError) {
      expect(error.code).toBe('unauthenticated');
      // The message is the same for every reason: it may reach the sender.
      expect(error.message).toBe('The webhook signature could not be verified.');
      return error.reason;
    }
    if (error instanceof FerryError) return error.code;
    throw error;
  }
}

const verify = (headers: Headers, options: VerifyWebhookOptions & { body?: string | Uint8Array; secret?: string | string[] } = {}) =>
  outcome(() => verifyWebhook(options.body ?? BODY, headers, options.secret ?? SECRET, { now: options.now ?? NOW, ...(options.toleranceSeconds !== undefined ? { toleranceSeconds: options.toleranceSeconds } : {}) }));

/**
 * The signature computed straight from the scheme with node:crypto, independent of the code under
 * test, as the reference suite's TestPayload does: HMAC-SHA256 over `<id>.<timestamp>.<body>`.
 */
function referenceSignature(secret: string, id: string, timestamp: number | string, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  return 'v1,' + createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64');
}

/** A payload signed at `timestampMs`, as the reference suite's TestPayload builds it. */
function testPayload(timestampMs = NOW): Headers {
  const timestamp = Math.floor(timestampMs / 1000);
  return { 'webhook-id': ID, 'webhook-timestamp': String(timestamp), 'webhook-signature': referenceSignature(SECRET, ID, timestamp, BODY) };
}

/** mulberry32: a small seeded PRNG, so every run (and every failure) is reproducible. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomBytes(random: () => number, length: number): Buffer {
  const bytes = Buffer.alloc(length);
  for (let i = 0; i < length; i++) bytes[i] = Math.floor(random() * 256);
  return bytes;
}

const pick = <T>(random: () => number, items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
const between = (random: () => number, min: number, max: number): number => min + Math.floor(random() * (max - min + 1));

const ID_CHARS = [...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.'];
// ASCII, JSON's escapes, two-byte, three-byte and astral (surrogate pair) characters.
const TEXT_CHARS = ['a', 'Z', '0', ' ', '"', '\\', '\n', '{', '}', 'é', 'ß', '€', '中', '😀', '\u0000', '\u2028'];

function randomId(random: () => number): string {
  let id = 'msg_';
  for (let i = between(random, 1, 40); i > 0; i--) id += pick(random, ID_CHARS);
  return id;
}

function randomText(random: () => number, maxLength: number): string {
  let text = '';
  for (let i = between(random, 0, maxLength); i > 0; i--) text += pick(random, TEXT_CHARS);
  return text;
}

/** A JSON body with a random shape, serialized as a sender would. */
function randomJsonBody(random: () => number): string {
  const value: Record<string, unknown> = { type: 'pipeline.failed', data: { note: randomText(random, 60), n: Math.floor(random() * 1e9), ok: random() < 0.5 } };
  if (random() < 0.5) value.list = Array.from({ length: between(random, 0, 5) }, () => randomText(random, 10));
  return JSON.stringify(value, null, random() < 0.3 ? 2 : undefined);
}

/** A valid secret of 24 to 64 random bytes: the whole range receivers must accept. */
function randomSecret(random: () => number): string {
  return 'whsec_' + randomBytes(random, between(random, 24, 64)).toString('base64');
}

describe('webhook signatures (Standard Webhooks)', () => {
  describe('the known-answer vector', () => {
    it('is what signWebhook and webhookHeaders produce', () => {
      expect(signWebhook({ id: ID, timestamp: TS, body: BODY }, [SECRET])).toBe(SIGNATURE);
      expect(signWebhook({ id: ID, timestamp: TS, body: Buffer.from(BODY) }, [SECRET])).toBe(SIGNATURE);
      expect(referenceSignature(SECRET, ID, TS, BODY)).toBe(SIGNATURE);
      expect(webhookHeaders({ id: ID, timestamp: TS, body: BODY }, [SECRET])).toEqual({
        'webhook-id': ID,
        'webhook-timestamp': String(TS),
        'webhook-signature': SIGNATURE,
        'x-service-signature': SIGNATURE,
      });
    });

    it('is accepted by verifyWebhook, from either signature header, with any casing and Fetch headers', () => {
      expect(verifyWebhook(BODY, { 'webhook-id': ID, 'webhook-timestamp': String(TS), 'webhook-signature': SIGNATURE }, SECRET, { now: NOW })).toEqual({ id: ID, timestamp: TS });
      expect(verifyWebhook(Buffer.from(BODY), { 'Webhook-Id': ID, 'Webhook-Timestamp': String(TS), 'X-Service-Signature': SIGNATURE }, SECRET, { now: NOW }).id).toBe(ID);
      const fetchHeaders = new Headers({ 'webhook-id': ID, 'webhook-timestamp': String(TS), 'webhook-signature': SIGNATURE });
      expect(verifyWebhook(BODY, fetchHeaders, [generateWebhookSecret(), SECRET], { now: NOW }).id).toBe(ID);
    });

    it('is what the standardwebhooks package signs and verifies', () => {
      expect(new Webhook(SECRET).sign(ID, new Date(NOW), BODY)).toBe(SIGNATURE);
    });
  });

  describe('against the standardwebhooks package (the reference implementation)', () => {
    // The reference verify reads the wall clock: freeze Date (only Date; no timer is faked and
    // nothing waits) so both sides agree on "now".
    beforeEach(() => {
      vi.useFakeTimers({ toFake: ['Date'] });
    });
    afterEach(() => {
      vi.useRealTimers();
    });

    it('verifies what it signs, for random ids, bodies, timestamps and secrets', () => {
      const random = prng(0x5eed01);
      for (let run = 0; run < 300; run++) {
        const secret = run % 3 === 0 ? generateWebhookSecret() : randomSecret(random);
        const id = randomId(random);
        const body = run % 2 === 0 ? randomJsonBody(random) : randomText(random, 300);
        const timestamp = between(random, 1_000_000_000, 4_000_000_000);
        const now = timestamp * 1000 + between(random, -TOLERANCE_MS, TOLERANCE_MS);
        const signature = new Webhook(secret).sign(id, new Date(timestamp * 1000), body);
        const headers = { 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': signature };
        const raw = run % 4 === 1 ? Buffer.from(body) : body;
        expect(verifyWebhook(raw, headers, secret, { now })).toEqual({ id, timestamp });
        expect(verifyWebhook(raw, headers, [generateWebhookSecret(), secret], { now })).toEqual({ id, timestamp });
        expect(outcome(() => verifyWebhook(raw, headers, generateWebhookSecret(), { now }))).toBe('bad_signature');
      }
    });

    it('is verified by it, for random ids, bodies, timestamps and secrets, one or two at a time', () => {
      const random = prng(0x5eed02);
      for (let run = 0; run < 300; run++) {
        const secrets = [randomSecret(random), ...(run % 2 === 0 ? [generateWebhookSecret()] : [])];
        const id = randomId(random);
        const json = run % 2 === 0;
        const body = json ? randomJsonBody(random) : randomText(random, 300);
        const timestamp = between(random, 1_000_000_000, 4_000_000_000);
        vi.setSystemTime(timestamp * 1000 + between(random, -TOLERANCE_MS + 1000, TOLERANCE_MS - 1000));
        const headers = webhookHeaders({ id, timestamp, body: run % 3 === 0 ? Buffer.from(body) : body }, secrets);
        for (const secret of secrets) {
          const webhook = new Webhook(secret);
          if (json) expect(webhook.verify(body, headers)).toEqual(JSON.parse(body));
          else expect(() => webhook.verify(body, headers, { jsonParse: false })).not.toThrow();
          // Our signatures are the reference's, byte for byte.
          expect(headers['webhook-signature']!.split(' ')).toContain(webhook.sign(id, new Date(timestamp * 1000), body));
        }
        expect(() => new Webhook(generateWebhookSecret()).verify(body, headers, { jsonParse: false })).toThrow();
      }
    });
  });

  describe('the Standard Webhooks test suite, ported', () => {
    it('accepts a valid signature, signed now', () => {
      expect(verify(testPayload())).toBe('accepted');
    });

    it('rejects a missing id, timestamp or signature', () => {
      for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
        const headers = testPayload();
        delete headers[name];
        expect(verify(headers), name).toBe('missing_headers');
        expect(verify({ ...testPayload(), [name]: '' }), `${name} empty`).toBe('missing_headers');
      }
      expect(verify({})).toBe('missing_headers');
    });

    it('rejects an invalid timestamp', () => {
      for (const timestamp of ['hello', '', ' ', '-5', `-${TS}`, `+${TS}`, ` ${TS}`, `${TS} `, `${TS}.0`, `${TS}abc`, '1e9', '0x6037e3b2', '1614265330000000']) {
        const expected = timestamp === '' ? 'missing_headers' : 'bad_timestamp';
        expect(verify({ ...testPayload(), 'webhook-timestamp': timestamp || undefined }), JSON.stringify(timestamp)).toBe(expected);
      }
    });

    it('rejects a timestamp with a leading zero even when signed as written', () => {
      // Two texts for one number would let the header change without the HMAC noticing.
      const text = `0${TS}`;
      expect(verify({ 'webhook-id': ID, 'webhook-timestamp': text, 'webhook-signature': referenceSignature(SECRET, ID, text, BODY) })).toBe('bad_timestamp');
      expect(verify({ 'webhook-id': ID, 'webhook-timestamp': text, 'webhook-signature': SIGNATURE })).toBe('bad_timestamp');
    });

    it('rejects an invalid signature', () => {
      expect(verify({ ...testPayload(), 'webhook-signature': 'v1,dawfeoifkpqwoekfpqoekf' })).toBe('bad_signature');
    });

    it('rejects a partial signature', () => {
      const full = testPayload()['webhook-signature']!;
      expect(verify({ ...testPayload(), 'webhook-signature': full.slice(0, 8) })).toBe('bad_signature');
      expect(verify({ ...testPayload(), 'webhook-signature': 'v1,' })).toBe('bad_signature');
      expect(verify({ ...testPayload(), 'webhook-signature': 'v1' })).toBe('bad_signature');
      expect(verify({ ...testPayload(), 'webhook-signature': full.slice(0, -4) })).toBe('bad_signature');
    });

    it('rejects a signature whose text is not the canonical base64 of the right bytes', () => {
      // Each of these decodes to the right 32 bytes under a lenient base64 decoder (Buffer's).
      const sig = SIGNATURE.slice(3);
      const variants = [
        sig.slice(0, -1), // no padding
        sig.slice(0, -2) + 'F=', // unused low bits set
        sig + 'AAAA', // junk after the padding
        sig.slice(0, -1) + '!!', // junk in place of the padding
        sig.replace('+', '-').replace('/', '_'), // base64url letters
        sig.slice(0, 10) + '\n' + sig.slice(10), // a line break inside
        sig.slice(0, 10) + '\t' + sig.slice(10),
      ];
      for (const variant of variants) {
        expect(Buffer.from(variant, 'base64').equals(Buffer.from(sig, 'base64')), JSON.stringify(variant)).toBe(true);
        expect(verify({ ...testPayload(NOW), 'webhook-signature': `v1,${variant}` }), JSON.stringify(variant)).toBe('bad_signature');
      }
      expect(verify({ ...testPayload(NOW), 'webhook-signature': SIGNATURE })).toBe('accepted');
    });

    it('rejects an empty signature', () => {
      expect(verify({ ...testPayload(), 'webhook-signature': '' })).toBe('missing_headers');
      for (const signature of [' ', '   ', ',', 'v1,', 'v1, ', ' v1,']) {
        expect(verify({ ...testPayload(), 'webhook-signature': signature }), JSON.stringify(signature)).toBe('bad_signature');
      }
    });

    it('rejects old and new timestamps beyond the tolerance, accepts them within', () => {
      for (const [offset, expected] of [
        [-TOLERANCE_MS - 1000, 'stale'],
        [TOLERANCE_MS + 1000, 'stale'],
        [-TOLERANCE_MS, 'accepted'],
        [TOLERANCE_MS, 'accepted'],
        [-365 * 86_400_000, 'stale'],
        [365 * 86_400_000, 'stale'],
      ] as const) {
        expect(verify(testPayload(NOW + offset)), String(offset)).toBe(expected);
      }
      // A custom tolerance, tighter and looser.
      expect(verify(testPayload(NOW - 11_000), { toleranceSeconds: 10 })).toBe('stale');
      expect(verify(testPayload(NOW - 10_000), { toleranceSeconds: 10 })).toBe('accepted');
      expect(verify(testPayload(NOW - 3_600_000), { toleranceSeconds: 3600 })).toBe('accepted');
      expect(verify(testPayload(NOW - 1000), { toleranceSeconds: 0 })).toBe('stale');
      expect(verify(testPayload(NOW), { toleranceSeconds: 0 })).toBe('accepted');
    });

    it('checks the timestamp against the signature, not only against the clock', () => {
      // A fresh timestamp header on an old, validly signed message: a replay with the time bumped.
      const old = testPayload(NOW - 3_600_000);
      expect(verify({ ...old, 'webhook-timestamp': String(TS) })).toBe('bad_signature');
    });

    it('rejects v2 and unknown version prefixes, even around a valid v1 signature value', () => {
      const value = SIGNATURE.slice(3);
      for (const prefix of ['v2', 'v0', 'V1', 'v1a', 'v1 ', 'v', '', 'v1,v1', 'v1a,v1']) {
        expect(verify({ ...testPayload(), 'webhook-signature': `${prefix},${value}` }), prefix).toBe('bad_signature');
      }
      expect(verify({ ...testPayload(), 'webhook-signature': value })).toBe('bad_signature');
      expect(verify({ ...testPayload(), 'webhook-signature': `v1=${value}` })).toBe('bad_signature');
    });

    it('rejects a signature made with another secret', () => {
      expect(verify(testPayload(), { secret: generateWebhookSecret() })).toBe('bad_signature');
      expect(verify(testPayload(), { secret: [generateWebhookSecret(), generateWebhookSecret()] })).toBe('bad_signature');
    });

    it('rejects several signatures of which none matches, even one valid under another version', () => {
      const other = 'v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=';
      const sigs = [other, SIGNATURE.replace('v1,', 'v2,'), other, referenceSignature(generateWebhookSecret(), ID, TS, BODY)];
      expect(verify({ ...testPayload(), 'webhook-signature': sigs.join(' ') })).toBe('bad_signature');
    });

    it('accepts several signatures when one matches (the multi sig payload)', () => {
      const sigs = [
        'v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=',
        'v2,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=',
        SIGNATURE, // the valid one
        'v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=',
      ];
      expect(verify({ ...testPayload(), 'webhook-signature': sigs.join(' ') })).toBe('accepted');
      // Runs of spaces and duplicated headers joined by Node (", ") leave the valid one intact.
      expect(verify({ ...testPayload(), 'webhook-signature': `${sigs[0]}   ${SIGNATURE}` })).toBe('accepted');
      expect(verify({ ...testPayload(), 'webhook-signature': `${sigs[0]}, ${SIGNATURE}` })).toBe('accepted');
    });

    it('accepts x-service-signature in place of webhook-signature (the unbranded form needs neither brand)', () => {
      const { 'webhook-signature': signature, ...rest } = testPayload();
      expect(verify({ ...rest, 'x-service-signature': signature })).toBe('accepted');
      expect(verify({ ...rest, 'webhook-signature': '', 'x-service-signature': signature })).toBe('accepted');
      // webhook-signature, when present, is the one read: a bad one is not rescued.
      expect(verify({ ...rest, 'webhook-signature': 'v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=', 'x-service-signature': signature })).toBe('bad_signature');
    });

    it('rejects a changed body, a re-serialized body and a changed id', () => {
      expect(verify(testPayload(), { body: BODY + ' ' })).toBe('bad_signature');
      expect(verify(testPayload(), { body: JSON.stringify(JSON.parse(BODY)) })).toBe('bad_signature');
      expect(verify({ ...testPayload(), 'webhook-id': ID + 'x' })).toBe('bad_signature');
    });

    it('treats an empty or malformed receiver secret as a configuration error, not a rejection', () => {
      // The reference accepts a secret without whsec_; Ferry's secrets always carry it, and a
      // missing prefix is more often a pasted API key or a truncated value than a foreign secret.
      for (const secret of ['', 'MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'whsec_', 'whsec_short==', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS']) {
        expect(verify(testPayload(), { secret }), secret).toBe('configuration_invalid');
      }
      expect(verify(testPayload(), { secret: [] })).toBe('configuration_invalid');
      expect(verify(testPayload(), { secret: [SECRET, 'nope'] })).toBe('configuration_invalid');
      // Whatever the request: a misconfiguration must not pass for a forged request.
      expect(verify({}, { secret: [] })).toBe('configuration_invalid');
    });

    it('treats a NaN or negative tolerance and a NaN clock as configuration errors', () => {
      // NaN compares false against every distance: it would accept any timestamp.
      expect(verify(testPayload(0), { toleranceSeconds: Number.NaN })).toBe('configuration_invalid');
      expect(verify(testPayload(), { toleranceSeconds: -1 })).toBe('configuration_invalid');
      expect(verify(testPayload(), { now: Number.NaN })).toBe('configuration_invalid');
    });
  });

  describe('signing with overlapping secrets', () => {
    it('carries one signature per secret; a receiver with either verifies', () => {
      const other = generateWebhookSecret();
      const headers = webhookHeaders({ id: ID, timestamp: TS, body: BODY }, [other, SECRET]);
      expect(headers['webhook-signature']!.split(' ')).toHaveLength(2);
      expect(verifyWebhook(BODY, headers, SECRET, { now: NOW }).id).toBe(ID);
      expect(verifyWebhook(BODY, headers, other, { now: NOW }).id).toBe(ID);
      expect(verifyWebhook(BODY, headers, [generateWebhookSecret(), other], { now: NOW }).id).toBe(ID);
    });
  });

  describe('any single changed byte of the id, the timestamp or the body fails verification (property)', () => {
    const secret = generateWebhookSecret();
    // The signature alone must catch each change: the clock check is taken out of the way.
    const options = (timestamp: number): VerifyWebhookOptions => ({ now: timestamp * 1000, toleranceSeconds: Number.POSITIVE_INFINITY });
    /** A different value for one byte: XOR with a random mask that is never 0. */
    const flip = (random: () => number, byte: number): number => byte ^ between(random, 1, 255);

    it('the id, at every position', () => {
      const random = prng(0x1d);
      for (let run = 0; run < 200; run++) {
        const id = randomId(random);
        const timestamp = between(random, 1_000_000_000, 4_000_000_000);
        const body = randomBytes(random, between(random, 0, 64));
        const headers = webhookHeaders({ id, timestamp, body }, [secret]);
        expect(outcome(() => verifyWebhook(body, headers, secret, options(timestamp)))).toBe('accepted');
        for (let at = 0; at < id.length; at++) {
          const changed = id.slice(0, at) + String.fromCharCode(flip(random, id.charCodeAt(at))) + id.slice(at + 1);
          expect(outcome(() => verifyWebhook(body, { ...headers, 'webhook-id': changed }, secret, options(timestamp))), `${id} -> ${changed}`).toBe('bad_signature');
        }
      }
    });

    it('the timestamp, at every position', () => {
      const random = prng(0x75);
      for (let run = 0; run < 200; run++) {
        const id = randomId(random);
        const timestamp = between(random, 1, 9_999_999_999);
        const body = randomBytes(random, between(random, 0, 64));
        const headers = webhookHeaders({ id, timestamp, body }, [secret]);
        const text = String(timestamp);
        expect(outcome(() => verifyWebhook(body, headers, secret, options(timestamp)))).toBe('accepted');
        for (let at = 0; at < text.length; at++) {
          const changed = text.slice(0, at) + String.fromCharCode(flip(random, text.charCodeAt(at))) + text.slice(at + 1);
          const result = outcome(() => verifyWebhook(body, { ...headers, 'webhook-timestamp': changed }, secret, options(timestamp)));
          // A digit turned into another digit is a different, signed-over number; anything else is no timestamp.
          expect(result, `${text} -> ${JSON.stringify(changed)}`).toBe(/^(?:0|[1-9]\d*)$/.test(changed) ? 'bad_signature' : 'bad_timestamp');
        }
      }
    });

    it('the body: every position of short bodies, a dense sample of long ones', () => {
      const random = prng(0xb0d1);
      const lengths = [1, 2, 3, 31, 32, 33, 63, 64, 65, 127, 128, 129, 500, 4096, 65_536, 1_048_576];
      for (const length of lengths) {
        const id = randomId(random);
        const timestamp = between(random, 1_000_000_000, 4_000_000_000);
        const body = randomBytes(random, length);
        const headers = webhookHeaders({ id, timestamp, body }, [secret]);
        expect(outcome(() => verifyWebhook(body, headers, secret, options(timestamp)))).toBe('accepted');
        // Every byte up to 4 KiB; past that the first and last 32 bytes and random ones, as many
        // as hashing about 64 MiB allows (1024 at 64 KiB, 128 at 1 MiB).
        const positions = new Set<number>();
        if (length <= 4096) for (let at = 0; at < length; at++) positions.add(at);
        else {
          for (let at = 0; at < 32; at++) positions.add(at).add(length - 1 - at);
          const sample = Math.min(1024, Math.max(128, Math.floor(2 ** 26 / length)));
          while (positions.size < sample) positions.add(Math.floor(random() * length));
        }
        for (const at of positions) {
          const original = body[at]!;
          body[at] = flip(random, original);
          expect(outcome(() => verifyWebhook(body, headers, secret, options(timestamp))), `length ${length}, byte ${at}`).toBe('bad_signature');
          body[at] = original;
        }
        // A byte more or less fails too.
        expect(outcome(() => verifyWebhook(body.subarray(0, length - 1), headers, secret, options(timestamp)))).toBe('bad_signature');
        expect(outcome(() => verifyWebhook(Buffer.concat([body, Buffer.from([0])]), headers, secret, options(timestamp)))).toBe('bad_signature');
      }
    });
  });
});

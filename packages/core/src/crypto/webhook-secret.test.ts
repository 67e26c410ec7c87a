import { createHmac, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  WEBHOOK_SECRET_MAX_BYTES,
  WEBHOOK_SECRET_MIN_BYTES,
  WEBHOOK_SECRET_PREFIX,
  generateWebhookSecret,
  webhookSecretBytes,
} from './webhook-secret.js';

describe('webhook secrets', () => {
  it('accepts the Standard Webhooks known-answer secret as its 24 key bytes', () => {
    // Test vector of the Standard Webhooks specification and reference libraries.
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const bytes = webhookSecretBytes(secret);
    expect(bytes).not.toBeNull();
    expect(bytes).toHaveLength(24);
    expect(bytes?.toString('base64')).toBe('MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw');
    // The decoded bytes (not the text) are the HMAC key: the vector's signature proves it.
    const signed = 'msg_p5jXN8AQM9LWM0D4loKWxJek.1614265330.{"test": 2432232314}';
    const signature = createHmac('sha256', bytes ?? Buffer.alloc(0)).update(signed).digest('base64');
    expect(signature).toBe('g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
  });

  it('generates whsec_ + standard base64 of 32 random bytes, which it accepts', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 100; i += 1) {
      const secret = generateWebhookSecret();
      expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      expect(webhookSecretBytes(secret)).toHaveLength(32);
      seen.add(secret);
    }
    expect(seen.size).toBe(100);
    expect(WEBHOOK_SECRET_PREFIX).toBe('whsec_');
  });

  it('accepts every length from 24 to 64 bytes and rejects 23 and 65', () => {
    expect([WEBHOOK_SECRET_MIN_BYTES, WEBHOOK_SECRET_MAX_BYTES]).toEqual([24, 64]);
    for (let length = 0; length <= 80; length += 1) {
      const bytes = randomBytes(length);
      const result = webhookSecretBytes(WEBHOOK_SECRET_PREFIX + bytes.toString('base64'));
      if (length >= 24 && length <= 64) expect(result?.equals(bytes), String(length)).toBe(true);
      else expect(result, String(length)).toBeNull();
    }
  });

  it('rejects a missing or wrong prefix', () => {
    const secret = generateWebhookSecret();
    const body = secret.slice(WEBHOOK_SECRET_PREFIX.length);
    for (const candidate of [body, `whsec${body}`, `WHSEC_${body}`, `whsk_${body}`, ` ${secret}`, `whsec_whsec_${body}`]) {
      expect(webhookSecretBytes(candidate), candidate).toBeNull();
    }
  });

  it('rejects base64 that is not standard, padded and canonical', () => {
    const bytes = Buffer.from([0xfb, 0xff, ...randomBytes(30)]); // 32 bytes, starts with '+/' in base64
    const encoded = bytes.toString('base64');
    expect(encoded.startsWith('+/')).toBe(true);
    const last = encoded.at(-2) ?? 'A';
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
    // Same bytes under a lenient decoder: the unused low bits of the last character set.
    const nonCanonical = `${encoded.slice(0, -2)}${alphabet[alphabet.indexOf(last) + 1]}=`;
    expect(Buffer.from(nonCanonical, 'base64').equals(bytes)).toBe(true);
    const bad = [
      'whsec_',
      `whsec_${encoded.replace(/=$/, '')}`, // padding missing
      `whsec_${bytes.toString('base64url')}`, // url alphabet
      `whsec_${encoded}=`,
      `whsec_${encoded} `,
      `whsec_${encoded}\n`,
      `whsec_${encoded.slice(0, 10)} ${encoded.slice(10)}`,
      `whsec_${encoded.slice(0, 10)}!${encoded.slice(11)}`,
      `whsec_${nonCanonical}`,
      `whsec_${encoded.slice(0, 20)}=${encoded.slice(21)}`,
    ];
    for (const candidate of bad) expect(webhookSecretBytes(candidate), candidate).toBeNull();
    expect(webhookSecretBytes(`whsec_${encoded}`)?.equals(bytes)).toBe(true);
    expect(webhookSecretBytes(undefined as unknown as string)).toBeNull();
  });
});

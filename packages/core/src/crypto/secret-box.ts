import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';
import { FerryError } from '../common/index.js';

const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const VERSION = 'v1';
/** iv | tag | encrypted 32-byte DEK: fixed, so any other length is malformed before any crypto runs. */
const WRAPPED_DEK_BYTES = IV_BYTES + TAG_BYTES + KEY_BYTES;

const HEX_KEY = /^[0-9a-fA-F]{64}$/;
// 32 bytes are 43 base64 characters plus one '=' of padding; the alphabets are checked separately
// so a value mixing '+/' with '-_' (a sign of a mangled copy) is refused rather than guessed at.
const BASE64_KEY = /^[A-Za-z0-9+/]{43}=?$/;
const BASE64URL_KEY = /^[A-Za-z0-9_-]{43}=?$/;
const BASE64URL_SEGMENT = /^[A-Za-z0-9_-]+$/;

// Deliberately says nothing about the value received: it is a secret, and error messages end up in logs.
const BAD_KEY_MESSAGE =
  'The secret key must be 32 bytes, given as 64 hex characters or as base64 / base64url of 32 bytes.';
const OPEN_FAILED_MESSAGE =
  'secret could not be decrypted: the value is corrupted, was sealed for another record, or under another secret key';

/**
 * Reads the engine's key-encryption key from configuration.
 *
 * Accepts exactly 32 raw bytes, 64 hex characters, or standard / url-safe base64 of 32 bytes
 * (padding optional, surrounding whitespace ignored because environment files often carry a
 * trailing newline). Base64 must be canonical, so two spellings never name the same key by accident.
 *
 * @throws FerryError `configuration_invalid` for anything else; the message never echoes the input.
 */
export function parseSecretKey(input: string | Uint8Array): Buffer {
  if (typeof input !== 'string') {
    if (input instanceof Uint8Array && input.length === KEY_BYTES) return Buffer.from(input);
    throw new FerryError('configuration_invalid', BAD_KEY_MESSAGE);
  }
  const text = input.trim();
  if (HEX_KEY.test(text)) return Buffer.from(text, 'hex');
  if (BASE64_KEY.test(text) || BASE64URL_KEY.test(text)) {
    const unpadded = text.replace(/=$/, '');
    const bytes = Buffer.from(unpadded, 'base64url');
    const canonical = unpadded.replace(/\+/g, '-').replace(/\//g, '_');
    // The 43rd character carries 2 unused bits; re-encoding rejects values where they are set.
    if (bytes.length === KEY_BYTES && bytes.toString('base64url') === canonical) return bytes;
  }
  throw new FerryError('configuration_invalid', BAD_KEY_MESSAGE);
}

/** A fresh random key-encryption key, in the base64url form {@link parseSecretKey} accepts. */
export function generateSecretKey(): string {
  return randomBytes(KEY_BYTES).toString('base64url');
}

/**
 * Envelope encryption of connector secrets at rest (docs/concepts.md, Secrets at rest), AES-256-GCM throughout.
 *
 * Each value gets its own random data-encryption key (DEK), which is itself encrypted under the
 * engine's key-encryption key (KEK). A fresh DEK per value keeps the random-IV GCM limits per key
 * out of reach however many values are sealed, and lets a future KEK rotation re-wrap DEKs without
 * touching the data. The `aad` binds a sealed value to its place (say a connector id and field),
 * so a ciphertext copied into another record fails to open.
 *
 * Sealed format: `v1.<keyId>.<b64url(iv|tag|encDek)>.<b64url(iv|tag|ciphertext)>`, plain ASCII.
 */
export class SecretBox {
  /**
   * First 8 hex characters of SHA-256 of the KEK. Stored in every sealed value so that, once
   * several KEKs exist, the right one can be picked; it reveals nothing usable about the key.
   */
  readonly keyId: string;
  // An ES private field keeps the key out of util.inspect, console.log and JSON.stringify output.
  readonly #kek: Buffer;

  /**
   * @param secretKey the 32-byte KEK, usually from {@link parseSecretKey}. It is copied, so later
   * changes to the caller's buffer do not affect the box.
   * @throws FerryError `configuration_invalid` when the key is not 32 bytes.
   */
  constructor(secretKey: Buffer) {
    if (!(secretKey instanceof Uint8Array) || secretKey.length !== KEY_BYTES) {
      throw new FerryError('configuration_invalid', BAD_KEY_MESSAGE);
    }
    this.#kek = Buffer.from(secretKey);
    this.keyId = createHash('sha256').update(this.#kek).digest('hex').slice(0, 8);
  }

  /**
   * Encrypts `plaintext` for storage; every call gives a different output.
   *
   * @param aad context the value belongs to; the same string must be given to {@link open}.
   */
  seal(plaintext: string, aad: string): string {
    const dek = randomBytes(KEY_BYTES);
    try {
      const data = gcmEncrypt(dek, Buffer.from(plaintext, 'utf8'), Buffer.from(aad, 'utf8'));
      // keyId is fixed-length, so keyId + aad cannot collide with another (keyId, aad) pair.
      const wrapped = gcmEncrypt(this.#kek, dek, Buffer.from(this.keyId + aad, 'utf8'));
      return `${VERSION}.${this.keyId}.${wrapped.toString('base64url')}.${data.toString('base64url')}`;
    } finally {
      dek.fill(0);
    }
  }

  /**
   * Decrypts a value made by {@link seal} with the same `aad`.
   *
   * @throws FerryError `internal` when the value was tampered with, belongs to another `aad`, was
   * sealed under another key, has an unknown version or is malformed. The message is the same
   * generic text in every case and never contains plaintext or key material.
   */
  open(sealed: string, aad: string): string {
    if (typeof sealed !== 'string') throw openFailed();
    const parts = sealed.split('.');
    if (parts.length !== 4) throw openFailed();
    const [version, keyId, wrappedText, dataText] = parts as [string, string, string, string];
    if (version !== VERSION || keyId !== this.keyId) throw openFailed();
    const wrapped = decodeSegment(wrappedText);
    const data = decodeSegment(dataText);
    if (wrapped === null || wrapped.length !== WRAPPED_DEK_BYTES) throw openFailed();
    if (data === null || data.length < IV_BYTES + TAG_BYTES) throw openFailed();
    let dek: Buffer | null = null;
    try {
      dek = gcmDecrypt(this.#kek, wrapped, Buffer.from(keyId + aad, 'utf8'));
      return gcmDecrypt(dek, data, Buffer.from(aad, 'utf8')).toString('utf8');
    } catch {
      // OpenSSL's own messages are harmless but vary; one message keeps logs and tests predictable.
      throw openFailed();
    } finally {
      dek?.fill(0);
    }
  }

  /**
   * A 32-byte subkey for another purpose (e.g. signing pagination cursors), by HKDF-SHA256 with
   * salt `ferry` and `label` as info. Distinct labels give independent keys, so no purpose ever
   * uses the KEK itself and a leaked subkey exposes neither the KEK nor other subkeys. Stable for
   * a given KEK and label.
   */
  deriveKey(label: string): Buffer {
    return Buffer.from(hkdfSync('sha256', this.#kek, 'ferry', label, KEY_BYTES));
  }
}

function openFailed(): FerryError {
  return new FerryError('internal', OPEN_FAILED_MESSAGE);
}

/**
 * Strict base64url: Buffer's decoder skips foreign characters and ignores the unused low bits of
 * the last character, which would let an edited sealed string decode to the same bytes.
 */
function decodeSegment(text: string): Buffer | null {
  if (!BASE64URL_SEGMENT.test(text)) return null;
  const bytes = Buffer.from(text, 'base64url');
  return bytes.toString('base64url') === text ? bytes : null;
}

/** iv | tag | ciphertext. */
function gcmEncrypt(key: Buffer, plaintext: Buffer, aad: Buffer): Buffer {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(aad);
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), ciphertext]);
}

function gcmDecrypt(key: Buffer, sealed: Buffer, aad: Buffer): Buffer {
  const iv = sealed.subarray(0, IV_BYTES);
  const tag = sealed.subarray(IV_BYTES, IV_BYTES + TAG_BYTES);
  // authTagLength pins the tag size so a truncated tag cannot be accepted.
  const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
  decipher.setAAD(aad);
  decipher.setAuthTag(tag);
  return Buffer.concat([decipher.update(sealed.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]);
}

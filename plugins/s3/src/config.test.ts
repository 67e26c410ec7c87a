import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import { classifyError } from './client.js';
import { s3ConfigSchema, validateS3Config, type S3Config } from './config.js';
import { objectKey, planObjects } from './destination.js';
import { parsePosition } from './source.js';

const base: S3Config = { bucket: 'my-bucket' };
const awsError = (name: string, status?: number) => Object.assign(new Error(`${name} happened`), { name, $metadata: { httpStatusCode: status } });

describe('s3 config', () => {
  it('takes the documented keys and refuses bad bucket names and unknown keys', () => {
    const full = Value.Default(s3ConfigSchema, { bucket: 'events-1', prefix: 'p/', region: 'eu-west-1', endpoint: 'https://s3.example.com', force_path_style: true, access_key_id: 'AKID', secret_access_key: 's', session_token: 't', role_arn: 'arn:aws:iam::123456789012:role/writer', external_id: 'ext-1', format: 'json', compression: 'gzip', checksums: 'when_required', max_batch_bytes: 1_048_576 });
    expect(Value.Check(s3ConfigSchema, full)).toBe(true);
    expect(Value.Check(s3ConfigSchema, { bucket: 'Upper_Case' })).toBe(false);
    expect(Value.Check(s3ConfigSchema, { bucket: 'ok-bucket', surprise: 1 })).toBe(false);
    expect(Value.Default(s3ConfigSchema, { bucket: 'b-1' })).toMatchObject({ prefix: '', region: 'us-east-1', format: 'jsonl', compression: 'none', checksums: 'when_supported', max_batch_bytes: 8 * 1024 * 1024 });
  });

  it('wants keys in pairs, a session token or external id only with what they go with, and an http(s) endpoint', () => {
    expect(validateS3Config({ ...base, access_key_id: 'AKID' }, 'destination').map((p) => p.pointer)).toEqual(['/secret_access_key']);
    expect(validateS3Config({ ...base, session_token: 't' }, 'source').map((p) => p.pointer)).toEqual(['/session_token']);
    expect(validateS3Config({ ...base, external_id: 'x' }, 'source').map((p) => p.pointer)).toEqual(['/external_id']);
    expect(validateS3Config({ ...base, endpoint: 'ftp://host' }, 'source').map((p) => p.pointer)).toEqual(['/endpoint']);
    expect(validateS3Config({ ...base, endpoint: 'https://key:secret@host' }, 'source').map((p) => p.pointer)).toEqual(['/endpoint']);
    expect(validateS3Config({ ...base, type: 't' }, 'destination').map((p) => p.pointer)).toEqual(['/type']);
    expect(validateS3Config({ ...base, type: 't', access_key_id: 'a', secret_access_key: 'b' }, 'source')).toEqual([]);
  });
});

describe('s3 objects and positions', () => {
  const event = (id: string, occurredAt: string) => ({ id, type: 't', occurredAt, payload: { a: 1 } });

  it('names objects by the first event\'s UTC day and the batch\'s first and last ids', () => {
    expect(objectKey({ ...base, prefix: 'raw/' }, 'pip_1', event('evt_a', '2026-12-31T23:30:00.000-02:00'), event('evt_b', '2027-01-01T00:00:00.000Z'))).toBe('raw/2027/01/01/pip_1-evt_a-evt_b.jsonl');
    expect(objectKey({ ...base, format: 'json', compression: 'gzip' }, 'pip_1', event('evt_a', '2026-02-03T00:00:00.000Z'), event('evt_a', 'x'))).toBe('2026/02/03/pip_1-evt_a-evt_a.json.gz');
  });

  it('splits at max_batch_bytes in order, and the same batch is planned the same way', () => {
    const events = Array.from({ length: 10 }, (_, i) => event(`evt_${i}`, '2026-01-01T00:00:00.000Z'));
    const plan = planObjects(events, { ...base, max_batch_bytes: 1024 }, 'pip_1');
    expect(plan.objects.flatMap((o) => o.indexes)).toEqual([...Array(10).keys()]);
    expect(plan.objects.every((o) => o.lines.reduce((n, l) => n + Buffer.byteLength(l) + 1, 0) <= 1024)).toBe(true);
    expect(planObjects(events, { ...base, max_batch_bytes: 1024 }, 'pip_1').objects.map((o) => o.key)).toEqual(plan.objects.map((o) => o.key));
  });

  it('accepts only its own checkpoints', () => {
    expect(parsePosition(null)).toBeNull();
    expect(parsePosition({ key: 'a', line: 3, offset: 40, done: false })).toEqual({ key: 'a', line: 3, offset: 40, done: false });
    for (const bad of [{ key: 'a' }, { key: 'a', line: -1, offset: 0, done: true }, 'a', 5]) {
      expect(() => parsePosition(bad as never)).toThrow(expect.objectContaining({ code: 'invalid_checkpoint' }));
    }
  });
});

describe('s3 error classification', () => {
  it('holds the flow on throttling, 5xx, timeouts and network errors', () => {
    expect(classifyError(awsError('SlowDown', 503), 'destination')).toMatchObject({ code: 'throttled', retryable: true });
    expect(classifyError(awsError('InternalError', 500), 'source')).toMatchObject({ code: 'source_unavailable', retryable: true });
    expect(classifyError(awsError('TimeoutError'), 'check')).toMatchObject({ code: 'timeout', retryable: true });
    expect(classifyError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }), 'destination')).toMatchObject({ code: 'connection_refused', retryable: true });
  });

  it('stops on credentials, permissions, a missing bucket and other refusals', () => {
    expect(classifyError(awsError('InvalidAccessKeyId', 403), 'source')).toMatchObject({ code: 'auth_failed', retryable: false });
    expect(classifyError(awsError('SignatureDoesNotMatch', 403), 'destination')).toMatchObject({ code: 'auth_failed', retryable: false });
    expect(classifyError(awsError('AccessDenied', 403), 'destination')).toMatchObject({ code: 'permission_denied', retryable: false });
    expect(classifyError(awsError('NoSuchBucket', 404), 'check')).toMatchObject({ code: 'bucket_not_found', retryable: false });
    expect(classifyError(awsError('InvalidRequest', 400), 'destination')).toMatchObject({ code: 'request_failed', retryable: false });
  });
});

import { describe, expect, it } from 'vitest';
import { ERROR_STATUS, FerryError, isFerryError, notFound, validationError, type ErrorCode } from './errors.js';

describe('FerryError', () => {
  it.each([
    ['validation_failed', 400],
    ['malformed_json', 400],
    ['invalid_cursor', 400],
    ['unauthenticated', 401],
    ['forbidden', 403],
    ['not_found', 404],
    ['name_taken', 409],
    ['connector_in_use', 409],
    ['invalid_state_transition', 409],
    ['event_not_dead_lettered', 409],
    ['rotation_in_progress', 409],
    ['rotation_failed', 409],
    ['delivery_in_progress', 409],
    ['payload_too_large', 413],
    ['unsupported_media_type', 415],
    ['invalid_reference', 422],
    ['invalid_direction', 422],
    ['invalid_schedule', 422],
    ['unknown_event_type', 422],
    ['url_not_allowed', 422],
    ['idempotency_key_reused', 422],
    ['rate_limited', 429],
    ['internal', 500],
    ['unavailable', 503],
  ] as const)('maps %s to %i', (code, status) => {
    const error = new FerryError(code, 'x');
    expect(error.status).toBe(status);
    expect(ERROR_STATUS[code]).toBe(status);
  });

  it('uses snake_case codes with a 4xx or 5xx status throughout', () => {
    for (const [code, status] of Object.entries(ERROR_STATUS)) {
      expect(code).toMatch(/^[a-z]+(_[a-z]+)*$/);
      expect(status).toBeGreaterThanOrEqual(400);
      expect(status).toBeLessThan(600);
    }
  });

  it('carries its options', () => {
    const cause = new Error('root');
    const errors = [{ pointer: '/a', code: 'required', detail: 'd' }];
    const error = new FerryError('invalid_state_transition', 'nope', { errors, currentStatus: 'paused', retryAfterSeconds: 3, cause });
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('FerryError');
    expect(error.message).toBe('nope');
    expect(error.code).toBe('invalid_state_transition');
    expect(error.errors).toBe(errors);
    expect(error.currentStatus).toBe('paused');
    expect(error.retryAfterSeconds).toBe(3);
    expect(error.cause).toBe(cause);
  });

  it('leaves absent options undefined', () => {
    const error = new FerryError('internal', 'x');
    expect(error.errors).toBeUndefined();
    expect(error.currentStatus).toBeUndefined();
    expect(error.retryAfterSeconds).toBeUndefined();
    expect('cause' in error).toBe(false);
  });
});

describe('helpers', () => {
  it('validationError builds a 400 with the field errors', () => {
    const errors = [{ pointer: '/name', code: 'required', detail: 'This field is required.' }];
    const error = validationError(errors);
    expect(error.code).toBe('validation_failed');
    expect(error.status).toBe(400);
    expect(error.errors).toEqual(errors);
    expect(validationError([], 'custom').message).toBe('custom');
  });

  it('notFound builds a 404 naming the kind and id', () => {
    const error = notFound('pipeline', 'pip_123');
    expect(error.code).toBe('not_found');
    expect(error.status).toBe(404);
    expect(error.message).toContain('pipeline');
    expect(error.message).toContain('"pip_123"');
  });
});

describe('isFerryError', () => {
  it('recognizes FerryErrors, with or without a code', () => {
    const error = new FerryError('forbidden', 'x');
    expect(isFerryError(error)).toBe(true);
    expect(isFerryError(error, 'forbidden')).toBe(true);
    expect(isFerryError(error, 'not_found' as ErrorCode)).toBe(false);
  });

  it('refuses look-alikes and other values', () => {
    const lookAlike = Object.assign(new Error('x'), { code: 'forbidden', status: 403 });
    expect(isFerryError(lookAlike)).toBe(false);
    expect(isFerryError({ code: 'forbidden', status: 403, name: 'FerryError' })).toBe(false);
    expect(isFerryError(null)).toBe(false);
    expect(isFerryError(undefined)).toBe(false);
    expect(isFerryError('forbidden')).toBe(false);
  });

  it('recognizes subclasses', () => {
    class Special extends FerryError {}
    expect(isFerryError(new Special('unavailable', 'x'), 'unavailable')).toBe(true);
  });
});

import type { Static } from '@sinclair/typebox';
import type { resourceSchemas } from './shapes.js';

/**
 * Every error code the engine can produce, with the HTTP status the /v2 API answers for it
 * (docs/api.md, Errors). The code is the stable part clients branch on; messages may change.
 */
export const ERROR_STATUS = {
  validation_failed: 400,
  malformed_json: 400,
  invalid_cursor: 400,
  unsafe_pattern: 400,
  invalid_character: 400,
  invalid_encoding: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  name_taken: 409,
  connector_in_use: 409,
  invalid_state_transition: 409,
  event_not_dead_lettered: 409,
  rotation_in_progress: 409,
  rotation_failed: 409,
  delivery_in_progress: 409,
  idempotency_key_in_progress: 409,
  lease_lost: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  invalid_reference: 422,
  invalid_direction: 422,
  invalid_schedule: 422,
  unknown_event_type: 422,
  url_not_allowed: 422,
  idempotency_key_reused: 422,
  backfill_unsupported: 422,
  backfill_needs_key: 422,
  invalid_where: 422,
  rate_limited: 429,
  internal: 500,
  configuration_invalid: 500,
  unavailable: 503,
} as const;

/** A stable, snake_case error code (docs/api.md, Errors). */
export type ErrorCode = keyof typeof ERROR_STATUS;

/** Every {@link ErrorCode}, in the order of {@link ERROR_STATUS}: the enum of a problem's `code`. */
export const ERROR_CODES = Object.keys(ERROR_STATUS) as readonly ErrorCode[];

/** One field-level problem, as listed in a problem+json `errors` array. */
export type FieldError = Static<typeof resourceSchemas.FieldError>;

/** Options carried by a {@link FerryError} besides its code and message. */
export interface FerryErrorOptions {
  /** Field-level problems (for `validation_failed`). */
  errors?: FieldError[];
  /** The current state of the resource, for 409s such as `invalid_state_transition`. */
  currentStatus?: string;
  /** Seconds after which retrying makes sense (429, 503). */
  retryAfterSeconds?: number;
  /** The underlying error, kept for logs; never serialized into a response. */
  cause?: unknown;
}

/**
 * The one error class of @ferry/core. Services throw it for every rule of the API, so an
 * embedder can branch on `code` exactly as an HTTP client branches on the problem+json `code`.
 */
export class FerryError extends Error {
  /** Stable machine-readable code. */
  readonly code: ErrorCode;
  /** HTTP status the /v2 API maps this code to. */
  readonly status: number;
  /** Field-level problems, when the error is about input. */
  readonly errors: FieldError[] | undefined;
  /** Current state of the resource involved, for state conflicts. */
  readonly currentStatus: string | undefined;
  /** Retry hint in seconds. */
  readonly retryAfterSeconds: number | undefined;

  constructor(code: ErrorCode, message: string, options: FerryErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'FerryError';
    this.code = code;
    this.status = ERROR_STATUS[code];
    this.errors = options.errors;
    this.currentStatus = options.currentStatus;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

/**
 * Field codes that become the error's own code when every problem of a request has that one
 * code: a client can tell a refused character or an unsafe pattern from an ordinary mistake.
 * With other problems besides, the request is simply `validation_failed`, listing them all.
 */
const PROMOTED_FIELD_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>(['invalid_character', 'unsafe_pattern']);

/**
 * Shorthand for a `validation_failed` error carrying field errors, or for `invalid_character` /
 * `unsafe_pattern` when every field error has that code.
 */
export function validationError(errors: FieldError[], message = 'The request is not valid.'): FerryError {
  const first = errors[0]?.code as ErrorCode | undefined;
  if (first !== undefined && PROMOTED_FIELD_CODES.has(first) && errors.every((e) => e.code === first)) {
    return new FerryError(first, errors.length === 1 ? errors[0]!.detail : message, { errors });
  }
  return new FerryError('validation_failed', message, { errors });
}

/** Shorthand for a `not_found` error; used for unknown ids and for ids of another workspace alike. */
export function notFound(kind: string, id: string): FerryError {
  return new FerryError('not_found', `No ${kind} with id ${JSON.stringify(id)}.`);
}

/** True when `value` is a {@link FerryError}, optionally with the given code. */
export function isFerryError(value: unknown, code?: ErrorCode): value is FerryError {
  return value instanceof FerryError && (code === undefined || value.code === code);
}

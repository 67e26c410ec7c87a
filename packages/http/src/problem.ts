import { isFerryError, type FieldError } from '@ferry/core';
import { ERROR_CODES, ERROR_STATUS, resourceSchemas, translateStorageError } from '@ferry/core/internal';
import { Type, type Static } from '@sinclair/typebox';
import type { HttpResponse } from './types.js';

/** Content type of every error answer (RFC 9457). */
export const PROBLEM_CONTENT_TYPE = 'application/problem+json';
/** Content type of every success answer. */
export const JSON_CONTENT_TYPE = 'application/json';

/**
 * Error codes the HTTP layer adds to the engine's own (`ERROR_STATUS` of @ferry/core): protocol
 * problems that exist only over HTTP.
 */
export const HTTP_ERROR_STATUS = {
  malformed_request: 400,
  method_not_allowed: 405,
  request_timeout: 408,
  headers_too_large: 431,
} as const;

/** Any code a problem answer can carry. */
export type ProblemCode = keyof typeof ERROR_STATUS | keyof typeof HTTP_ERROR_STATUS;

/** Every {@link ProblemCode}: the engine's, then the HTTP layer's. */
const PROBLEM_CODES: readonly ProblemCode[] = [...ERROR_CODES, ...(Object.keys(HTTP_ERROR_STATUS) as (keyof typeof HTTP_ERROR_STATUS)[])];

/** Schema of the problem+json body (docs/api.md, Errors), for the OpenAPI document. */
export const ProblemSchema = Type.Object({
  type: Type.String({ examples: ['/problems/validation_failed'] }),
  title: Type.String(),
  status: Type.Integer(),
  detail: Type.String(),
  // An `enum` of the string rather than a union of literals: one list of codes, still `type: string`.
  code: Type.Unsafe<ProblemCode>(Type.String({ description: 'Stable snake_case error code; branch on it.', enum: PROBLEM_CODES })),
  errors: Type.Optional(Type.Array(resourceSchemas.FieldError)),
  current_status: Type.Optional(Type.String()),
  request_id: Type.String(),
});

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  409: 'Conflict',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

/** An error the HTTP layer raises before or around the service call. */
export class HttpProblem extends Error {
  readonly status: number;
  constructor(
    readonly code: ProblemCode,
    message: string,
    readonly extra: { errors?: FieldError[]; headers?: Record<string, string>; currentStatus?: string; retryAfterSeconds?: number } = {},
  ) {
    super(message);
    this.name = 'HttpProblem';
    this.status = code in HTTP_ERROR_STATUS ? HTTP_ERROR_STATUS[code as keyof typeof HTTP_ERROR_STATUS] : ERROR_STATUS[code as keyof typeof ERROR_STATUS];
  }
}

/** The problem+json body of every error (docs/api.md, Errors). */
export type ProblemBody = Static<typeof ProblemSchema>;

/**
 * Turns anything thrown into the answer a client sees. Engine and HTTP errors keep their code and
 * message (both are written never to hold a secret); anything else is a bare 500 `internal` whose
 * cause goes to the log only; a storage outage is a 503 `unavailable`. Returns the response and,
 * for a 500 or an outage, the error to log.
 */
export function problemResponse(thrown: unknown, requestId: string): { response: HttpResponse; unexpected?: unknown } {
  // Storage reached outside the engine's services (the idempotency records) fails the same way.
  const error = translateStorageError(thrown);
  let status: number;
  let code: ProblemCode;
  let detail: string;
  let errors: FieldError[] | undefined;
  let currentStatus: string | undefined;
  let retryAfter: number | undefined;
  let headers: Record<string, string> = {};
  let unexpected: unknown;
  if (error instanceof HttpProblem) {
    ({ status, code } = error);
    detail = error.message;
    errors = error.extra.errors;
    currentStatus = error.extra.currentStatus;
    retryAfter = error.extra.retryAfterSeconds;
    headers = { ...error.extra.headers };
  } else if (isFerryError(error) && error.status < 500) {
    ({ status, code } = error);
    detail = error.message;
    errors = error.errors;
    currentStatus = error.currentStatus;
    retryAfter = error.retryAfterSeconds;
  } else if (isFerryError(error, 'unavailable')) {
    status = 503;
    code = 'unavailable';
    detail = 'The service is unavailable; retry later.';
    retryAfter = error.retryAfterSeconds ?? 5;
    // An outage (storage unreachable) is worth a log line; a shutdown is not.
    if (error.cause !== undefined) unexpected = error;
  } else {
    // Engine errors of the 5xx family (`configuration_invalid`, `internal`) and anything else:
    // the message may name internals, so the client gets a fixed text and the log the rest.
    status = 500;
    code = 'internal';
    detail = 'An internal error occurred; it has been logged with the request id.';
    unexpected = error;
  }
  const body: ProblemBody = {
    type: `/problems/${code}`,
    title: TITLES[status] ?? 'Error',
    status,
    detail,
    code,
    ...(errors && errors.length > 0 ? { errors } : {}),
    ...(currentStatus !== undefined ? { current_status: currentStatus } : {}),
    request_id: requestId,
  };
  if (retryAfter !== undefined) headers['retry-after'] = String(Math.max(1, Math.ceil(retryAfter)));
  headers['content-type'] = PROBLEM_CONTENT_TYPE;
  return { response: { status, headers, body: JSON.stringify(body) }, unexpected };
}

import type { FastifyError, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import { answerClientError, standaloneProblem, undecodablePathProblem } from '@ferry/http';

/**
 * Fastify's `frameworkErrors` option for a server that mounts {@link ferryPlugin}: the requests
 * Fastify refuses before any route sees them get problem+json with `X-Request-Id`, like every
 * other answer of the API, instead of Fastify's own JSON. A path whose percent-encoding is
 * malformed (`/v2/connectors/%E0%A4%A`, `FST_ERR_BAD_URL`) or whose segment is over the router's
 * length limit names no resource: 404 `not_found`; one whose escapes decode to bytes that are not
 * UTF-8 is 400 `invalid_encoding` (`invalid_character` for a lone surrogate's), as under `dispatch`.
 */
export function ferryFrameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const response =
    error.code === 'FST_ERR_BAD_URL' || error.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? undecodablePathProblem(request.url, request.headers)
      : standaloneProblem('malformed_request', 'The request could not be routed.', request.headers);
  // A Buffer, so Fastify sends the content type exactly as set (it appends a charset to strings).
  void reply.code(response.status).headers(response.headers).send(Buffer.from(response.body ?? ''));
}

/**
 * The Fastify server options that make every answer of a server mounting {@link ferryPlugin}
 * problem+json, including those Fastify and Node would write themselves: a malformed URL
 * ({@link ferryFrameworkErrors}) and what Node's HTTP parser refuses (a header block over
 * 16 KiB is 431 `headers_too_large`, malformed HTTP 400 `malformed_request`; see
 * `answerClientError` of @ferry/http). Spread them into the options you create Fastify with.
 *
 * @example
 * ```ts
 * const app = Fastify({ logger: true, ...ferryServerOptions });
 * await app.register(ferryPlugin, { engine });
 * ```
 */
export const ferryServerOptions = {
  frameworkErrors: ferryFrameworkErrors,
  clientErrorHandler: answerClientError,
} satisfies Pick<FastifyServerOptions, 'frameworkErrors' | 'clientErrorHandler'>;

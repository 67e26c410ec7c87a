import { randomUUID } from 'node:crypto';
import type { Duplex } from 'node:stream';
import { HttpProblem, problemResponse, type ProblemCode } from './problem.js';
import { pathEncodingProblem } from './path-encoding.js';
import { header } from './request-body.js';
import type { HttpHeaders, HttpResponse } from './types.js';

/** A client's `X-Request-Id` is echoed when it is printable ASCII of at most 200 characters. */
export const REQUEST_ID_PATTERN = /^[\x21-\x7e]{1,200}$/;

/** The request id of an answer: the client's when it sent a usable one, else a new UUID. */
export function requestIdOf(headers: HttpHeaders | undefined): string {
  const given = headers === undefined ? undefined : header(headers, 'x-request-id');
  return given !== undefined && REQUEST_ID_PATTERN.test(given) ? given : randomUUID();
}

/**
 * A problem+json answer made outside `dispatch`, for a request the framework or Node refused
 * before the API saw it (a malformed URL, a path outside the API on the reference server): the
 * same body, `X-Request-Id` and `Cache-Control` as every answer of the API, so no answer of a
 * Ferry server is in a framework's own format.
 */
export function standaloneProblem(code: ProblemCode, detail: string, requestHeaders?: HttpHeaders): HttpResponse {
  const requestId = requestIdOf(requestHeaders);
  const { response } = problemResponse(new HttpProblem(code, detail), requestId);
  response.headers = { ...response.headers, 'x-request-id': requestId, 'cache-control': 'no-store' };
  return response;
}

/**
 * The answer to a request whose path a framework's router could not decode (Fastify's
 * `FST_ERR_BAD_URL`), as `dispatch` would give it: 400 `invalid_encoding` or
 * `invalid_character` when the escapes decode to bytes that are not UTF-8 or to a character no
 * storage keeps, else (the escapes are malformed) 404 `not_found`.
 */
export function undecodablePathProblem(url: string, requestHeaders?: HttpHeaders): HttpResponse {
  const problem = pathEncodingProblem(url.split('?')[0]!);
  const requestId = requestIdOf(requestHeaders);
  const { response } = problemResponse(problem ?? new HttpProblem('not_found', 'No route has this path: its percent-encoding is malformed or a segment is too long.'), requestId);
  response.headers = { ...response.headers, 'x-request-id': requestId, 'cache-control': 'no-store' };
  return response;
}

/** What Node's HTTP parser attaches to the errors of its `clientError` event. */
type ClientError = Error & { code?: string; rawPacket?: Buffer };

/** The problem for a request Node's parser refused, by its error code. */
function clientProblem(error: ClientError): { code: ProblemCode; detail: string } {
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW':
      return { code: 'headers_too_large', detail: 'The request headers are larger than the server accepts (16 KiB by default).' };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
    case 'ERR_HTTP_HEADERS_TIMEOUT':
      return { code: 'request_timeout', detail: 'The request was not received in time.' };
    default:
      // The parser refuses a NUL byte in a header; the bytes it read tell that case apart.
      if (error.rawPacket?.includes(0)) return { code: 'invalid_character', detail: 'A header cannot contain the NUL character (U+0000).' };
      return { code: 'malformed_request', detail: 'The request is not valid HTTP/1.1.' };
  }
}

/**
 * A listener for the `clientError` event of a Node HTTP server (or Fastify's
 * `clientErrorHandler` option): answers what Node's parser refused (a header block over the
 * limit, 431 `headers_too_large`; malformed HTTP, 400 `malformed_request`; a request too slow to
 * arrive, 408 `request_timeout`) with problem+json and `X-Request-Id` instead of Node's bare
 * status line, then closes the connection: after a parse error nothing more on it can be read.
 *
 * @example
 * ```ts
 * const server = app.listen(8080);            // Express
 * server.on('clientError', answerClientError);
 * const fastify = Fastify({ clientErrorHandler: answerClientError });
 * ```
 */
export function answerClientError(error: Error, socket: Duplex): void {
  const failure = error as ClientError;
  // A connection reset or a socket already gone has nobody left to answer.
  if (failure.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const { code, detail } = clientProblem(failure);
  const response = standaloneProblem(code, detail);
  const head = [`HTTP/1.1 ${response.status} ${statusText(response.status)}`];
  for (const [name, value] of Object.entries(response.headers)) head.push(`${name}: ${value}`);
  head.push(`content-length: ${Buffer.byteLength(response.body ?? '')}`, 'connection: close');
  socket.end(`${head.join('\r\n')}\r\n\r\n${response.body ?? ''}`);
}

function statusText(status: number): string {
  return status === 431 ? 'Request Header Fields Too Large' : status === 408 ? 'Request Timeout' : 'Bad Request';
}

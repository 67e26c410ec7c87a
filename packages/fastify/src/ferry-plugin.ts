import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { Engine } from '@ferry/core';
import { createHttpApi, lingerAfterRefusedBody, type HttpApiOptions, type HttpBody, type HttpRequest } from '@ferry/http';

/** Options of {@link ferryPlugin}: the engine to serve, plus those of `createHttpApi`. */
export type FerryPluginOptions = HttpApiOptions & {
  /** The started (or about to be started) engine whose API is served. */
  engine: Engine;
};

/**
 * A Fastify 5 plugin that serves the Ferry /v2 API of `engine` under `/v2` (or `<prefix>/v2` when
 * registered with a `prefix`). Every method is answered by `@ferry/http`, so status codes,
 * headers and problem bodies are those of every other Ferry adapter.
 *
 * It is deliberately not wrapped in `fastify-plugin`: its catch-all content-type parser, which
 * hands the raw body stream to the API (to answer 400, 413 and 415 itself), stays inside the
 * plugin, and the host's own routes keep parsing JSON as before.
 *
 * @example
 * ```ts
 * const app = Fastify();
 * await app.register(ferryPlugin, { engine, prefix: '/api' });
 * ```
 */
export const ferryPlugin: FastifyPluginAsync<FerryPluginOptions> = async (app, options) => {
  // Fastify's own register options (prefix, logLevel...) ride along; createHttpApi ignores them.
  const { engine, ...httpOptions } = options;
  const api = createHttpApi(engine, httpOptions);
  const prefix = app.prefix;

  async function answer(request: FastifyRequest, reply: FastifyReply, body: HttpBody | undefined): Promise<FastifyReply> {
    const url = prefix !== '' && request.url.startsWith(prefix) ? request.url.slice(prefix.length) : request.url;
    const input: HttpRequest = { method: request.method, url, headers: request.headers, mountPath: prefix };
    if (body !== undefined) input.body = body;
    const remoteAddress = request.raw.socket.remoteAddress;
    if (remoteAddress !== undefined) input.remoteAddress = remoteAddress;
    const response = await api.dispatch(input);
    // A body refused half-way: the client must get the 413 before the connection closes.
    if (response.status === 413) lingerAfterRefusedBody(request.raw);
    reply.code(response.status).headers(response.headers);
    // A Buffer, not a string: Fastify would append a charset to a JSON Content-Type.
    return reply.send(response.body === undefined ? undefined : Buffer.from(response.body));
  }

  app.removeAllContentTypeParsers();
  // Every media type (and none) reaches the API unread.
  app.addContentTypeParser('*', (_request, payload, done) => done(null, payload));
  // Fastify refused the request before the handler (e.g. a Content-Type it cannot parse):
  // the API answers it instead, from the still unread stream.
  app.setErrorHandler((_error, request, reply) => answer(request, reply, request.raw));

  const route = {
    // The API answers HEAD itself (405 with Allow), as it does under Express.
    exposeHeadRoute: false,
    // The API enforces its own limit and answers 413 as problem+json.
    bodyLimit: Number.MAX_SAFE_INTEGER,
  };
  const handler = (request: FastifyRequest, reply: FastifyReply) =>
    // Bodyless methods (GET, HEAD) never reach the parser: hand over the request stream itself.
    answer(request, reply, (request.body as HttpBody | undefined) ?? request.raw);
  app.all('/v2', route, handler);
  app.all('/v2/*', route, handler);
};

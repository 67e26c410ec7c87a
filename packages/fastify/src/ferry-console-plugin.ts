import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { createConsoleHandler, type ConsoleOptions } from '@ferry/console';

/**
 * A Fastify 5 plugin that serves the Ferry Console under its `prefix`:
 * `app.register(ferryConsolePlugin, { prefix: '/console' })`. It is static files (the page, its
 * script and style sheet) which talk to the `/v2` API of the same origin; pass `apiBase` when
 * `ferryPlugin` is registered under a prefix (`{ prefix: '/console', apiBase: '/api' }`). Every
 * answer carries a Content-Security-Policy that allows scripts and requests from this origin
 * only.
 *
 * @example
 * ```ts
 * await app.register(ferryPlugin, { engine });
 * await app.register(ferryConsolePlugin, { prefix: '/console' });
 * ```
 */
export const ferryConsolePlugin: FastifyPluginAsync<ConsoleOptions> = async (app, options) => {
  const handle = createConsoleHandler({ apiBase: options.apiBase });
  const prefix = app.prefix;
  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.startsWith(prefix) ? request.url.slice(prefix.length) || '/' : request.url;
    const answer = handle({ method: request.method, path, basePath: prefix, headers: request.headers });
    reply.code(answer.status).headers(answer.headers);
    return reply.send(answer.body);
  };
  for (const url of ['/', '/*']) app.route({ method: ['GET', 'HEAD'], url, handler, exposeHeadRoute: false });
};

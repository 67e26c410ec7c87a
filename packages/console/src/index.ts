/**
 * @ferry/console: the Ferry Console, a single page to watch and repair pipelines, connectors and
 * webhook deliveries. It is static files that talk to the `/v2` API of the same origin with an
 * API key the user enters. {@link createConsoleHandler} serves them framework-free; `@ferry/express`
 * (`ferryConsole`), `@ferry/fastify` (`ferryConsolePlugin`) and `ferry serve` mount it.
 * @packageDocumentation
 */
export {
  createConsoleHandler,
  CONSOLE_CONTENT_SECURITY_POLICY,
  type ConsoleHandler,
  type ConsoleOptions,
  type ConsoleRequest,
  type ConsoleResponse,
} from './console-handler.js';

/**
 * @ferry/http: the /v2 HTTP surface of a Ferry engine, framework-free. `createHttpApi(engine)`
 * returns a route table and a `dispatch(request)` that does authentication, scopes, rate limits,
 * idempotency, body limits, validation, the service call and problem+json errors; the Express
 * and Fastify adapters only translate requests and responses.
 *
 * @packageDocumentation
 */
export { createHttpApi } from './create-http-api.js';
export { answerClientError, standaloneProblem, undecodablePathProblem } from './outside-dispatch.js';
export { lingerAfterRefusedBody, LINGER_MS } from './linger.js';
export { problemResponse } from './problem.js';
export {
  readLimitedBody,
  WEBHOOK_BODY_LIMIT,
  WebhookBodyTooLarge,
  webhookReceiverCore,
  type VerifiedWebhook,
  type WebhookCheck,
  type WebhookReceiver,
  type WebhookReceiverBaseOptions,
  type WebhookSecrets,
} from './webhook-receiver.js';
export type { HttpApi, HttpApiOptions, HttpBody, HttpHeaders, HttpRequest, HttpResponse, RateLimitSettings, RequestLog, RouteInfo } from './types.js';

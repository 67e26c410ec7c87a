/**
 * Who may call: workspaces, API keys, and `Idempotency-Key` records.
 */
export { API_KEY_SCOPES, apiKeyChecksum, generateApiKey, hashApiKeySecret, parseApiKey, scopeAllows, verifyApiKeySecret, type ApiKeyScope, type GeneratedApiKey } from './api-key.js';
export { ApiKeysService } from './api-keys-service.js';
export { IdempotencyService, type IdempotencyClaim, type IdempotentResponse } from './idempotency-service.js';
export { WorkspacesService } from './workspaces-service.js';

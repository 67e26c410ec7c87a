import { API_KEY_SCOPES, generateApiKey, hashApiKeySecret, parseApiKey, verifyApiKeySecret } from './api-key.js';
import { type ApiKey, type AuthContext, type CreateApiKeyInput, type CreatedApiKey, type Page, type PageParams, FerryError, isFerryError, notFound, validationError, paginate, inputSchemas, assertSchema } from '../common/index.js';
import { assertWorkspaceId, nowIso, reader, transact, type EngineContext } from '../context/index.js';
import { isUniqueViolation, type ApiKeyRow } from '../storage/index.js';

/** `last_used_at` is written at most this often per key, so authentication is not a write per request. */
const LAST_USED_RESOLUTION_MS = 60_000;

/**
 * API keys (docs/api.md, API keys): `fry_<key id>_<secret><checksum>`. Only the key id, the
 * SHA-256 of the secret and the last 4 characters are stored; verification is constant-time and
 * a bad checksum is refused before any storage lookup.
 */
export class ApiKeysService {
  constructor(private readonly ctx: EngineContext) {}

  /** Creates a key (or registers a supplied one); the result is the only time the key is shown. */
  async create(input: CreateApiKeyInput = {}): Promise<CreatedApiKey> {
    assertSchema(inputSchemas.createApiKey, input);
    const workspaceId = input.workspace ?? 'default';
    assertWorkspaceId(workspaceId);
    const scopes = input.scopes ?? ['write'];
    const badScopes = scopes.filter((s) => !(API_KEY_SCOPES as readonly string[]).includes(s));
    if (badScopes.length > 0) {
      throw validationError(
        badScopes.map((s) => ({ pointer: `/scopes/${scopes.indexOf(s)}`, code: 'enum', detail: `Known scopes: ${API_KEY_SCOPES.join(', ')}.` })),
      );
    }
    let key: { token: string; keyId: string; secretHash: string; last4: string };
    if (input.key !== undefined) {
      const parsed = parseApiKey(input.key);
      if (!parsed) throw validationError([{ pointer: '/key', code: 'format', detail: 'Not a well-formed API key (format or checksum).' }]);
      key = { token: input.key, keyId: parsed.keyId, secretHash: hashApiKeySecret(parsed.secret), last4: input.key.slice(-4) };
    } else {
      key = generateApiKey();
    }
    const now = nowIso(this.ctx);
    const row: ApiKeyRow = {
      id: this.ctx.ids.create('key'),
      key_id: key.keyId,
      workspace_id: workspaceId,
      name: input.name ?? null,
      scopes: [...scopes],
      secret_hash: key.secretHash,
      last4: key.last4,
      rate_limit: input.rate_limit ?? null,
      created_at: now,
      last_used_at: null,
      revoked_at: null,
    };
    await transact(this.ctx, async (repos) => {
      await repos.workspaces.create(workspaceId, now);
      if (await repos.apiKeys.getByKeyId(row.key_id)) {
        throw validationError([{ pointer: '/key', code: 'taken', detail: 'A key with this key id already exists.' }]);
      }
      await repos.apiKeys.insert(row);
    });
    return { ...present(row), key: key.token };
  }

  /**
   * Makes sure a supplied key exists (the server's bootstrap key): registers it when its key id
   * is unknown, returns it when it is already registered with the same secret. Fails when the key
   * id is taken by another secret or the key was revoked.
   */
  async ensure(token: string, input: Omit<CreateApiKeyInput, 'key'> = {}): Promise<ApiKey> {
    const parsed = parseApiKey(token);
    if (!parsed) throw validationError([{ pointer: '/key', code: 'format', detail: 'Not a well-formed API key (format or checksum).' }]);
    const mismatch = () => new FerryError('configuration_invalid', 'The key id is registered with another secret, or the key was revoked.');
    const existing = await reader(this.ctx).apiKeys.getByKeyId(parsed.keyId);
    if (!existing) {
      try {
        const { key: _shown, ...created } = await this.create({ ...input, key: token });
        return created;
      } catch (error) {
        // Several servers starting with the same bootstrap key: one registers it, the others
        // find it registered and check it below.
        if (!isFerryError(error, 'validation_failed') && !isUniqueViolation(error)) throw error;
      }
    }
    const row = existing ?? (await reader(this.ctx).apiKeys.getByKeyId(parsed.keyId));
    if (!row || !verifyApiKeySecret(parsed.secret, row.secret_hash) || row.revoked_at !== null) throw mismatch();
    return present(row);
  }

  /**
   * Authenticates a bearer token. Every failure (malformed, bad checksum, unknown, wrong secret,
   * revoked) is the same `unauthenticated`, so a caller learns nothing about which part failed.
   */
  async verify(token: string): Promise<AuthContext> {
    const fail = () => new FerryError('unauthenticated', 'A valid API key is required.');
    const parsed = parseApiKey(token);
    if (!parsed) throw fail();
    const repos = reader(this.ctx);
    const row = await repos.apiKeys.getByKeyId(parsed.keyId);
    // Hash and compare even when the key is unknown, so timing does not reveal which key ids exist.
    const matches = verifyApiKeySecret(parsed.secret, row?.secret_hash ?? UNKNOWN_KEY_HASH);
    if (!row || !matches || row.revoked_at !== null) throw fail();
    const now = this.ctx.clock.now();
    if (row.last_used_at === null || Date.parse(row.last_used_at) + LAST_USED_RESOLUTION_MS <= now) {
      await repos.apiKeys.touch(row.id, new Date(now).toISOString());
    }
    return { api_key_id: row.id, workspace_id: row.workspace_id, scopes: row.scopes, rate_limit: row.rate_limit };
  }

  /** One key of the workspace (never its secret). */
  async get(workspaceId: string, id: string): Promise<ApiKey> {
    const row = await reader(this.ctx).apiKeys.get(workspaceId, id);
    if (!row) throw notFound('api key', id);
    return present(row);
  }

  /** Keys of a workspace, revoked ones included (with `revoked_at`); never a secret. */
  async list(workspaceId: string, params: PageParams = {}): Promise<Page<ApiKey>> {
    const repos = reader(this.ctx);
    return paginate(
      this.ctx.cursors,
      params,
      { scope: { resource: 'api_keys', workspaceId, filters: {} }, key: (row: ApiKeyRow) => [row.id] },
      (after, limit, order) => repos.apiKeys.list(workspaceId, after, limit, order),
      (rows) => rows.map(present),
    );
  }

  /**
   * Revokes a key by its id (`key_...`) or its 8-character key id; it stops authenticating at
   * once. Revoking twice is harmless.
   */
  async revoke(workspaceId: string, id: string): Promise<ApiKey> {
    const now = nowIso(this.ctx);
    return transact(this.ctx, async (repos) => {
      let row = await repos.apiKeys.get(workspaceId, id);
      if (!row && /^[0-9A-Za-z]{8}$/.test(id)) {
        const byKeyId = await repos.apiKeys.getByKeyId(id);
        if (byKeyId?.workspace_id === workspaceId) row = byKeyId;
      }
      if (!row) throw notFound('api key', id);
      await repos.apiKeys.revoke(workspaceId, row.id, now);
      return present({ ...row, revoked_at: row.revoked_at ?? now });
    });
  }
}

// A hash no secret produces in practice; compared against when the key id is unknown.
const UNKNOWN_KEY_HASH = '0'.repeat(64);

function present(row: ApiKeyRow): ApiKey {
  return {
    id: row.id,
    key_id: row.key_id,
    workspace_id: row.workspace_id,
    name: row.name,
    scopes: row.scopes,
    last4: row.last4,
    rate_limit: row.rate_limit,
    created_at: row.created_at,
    last_used_at: row.last_used_at,
    revoked_at: row.revoked_at,
  };
}

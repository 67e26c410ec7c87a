import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { Clock } from './clock.js';
import type { Page, PageParams, SortOrder } from './domain.js';
import { FerryError, validationError } from './errors.js';

/** The result of one keyset query: a page of rows, and whether more follow (storage answers it). */
export interface KeysetResult<TRow> {
  rows: TRow[];
  hasMore: boolean;
}

/** Default page size (docs/api.md, Lists). */
export const DEFAULT_LIMIT = 50;
/** Largest page size; larger requests are lowered to it. */
export const MAX_LIMIT = 100;
/** How long a cursor stays valid. */
export const CURSOR_TTL_MS = 72 * 3600 * 1000;

/** What a cursor is bound to: a listing, a workspace and the filters it was made with. */
export interface CursorScope {
  /** The listing, e.g. `pipelines` or `events:pip_...`. */
  resource: string;
  workspaceId: string;
  /** Filters of the listing; `undefined` members are ignored. */
  filters: Record<string, unknown>;
}

/**
 * Validates a page size: absent gives the default, above 100 is lowered to 100, anything that is
 * not an integer of at least 1 is a `validation_failed` on `/limit`.
 */
export function normalizeLimit(limit: unknown): number {
  if (limit === undefined) return DEFAULT_LIMIT;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1) {
    throw validationError([{ pointer: '/limit', code: 'invalid_limit', detail: 'limit must be an integer of at least 1.' }]);
  }
  return Math.min(limit, MAX_LIMIT);
}

/** Validates a listing's order: absent gives `asc`; anything but `asc` or `desc` is a `validation_failed` on `/order`. */
export function normalizeOrder(order: unknown): SortOrder {
  if (order === undefined) return 'asc';
  if (order !== 'asc' && order !== 'desc') {
    throw validationError([{ pointer: '/order', code: 'enum', detail: 'Expected one of "asc", "desc"' }]);
  }
  return order;
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

const b64 = (buf: Buffer) => buf.toString('base64url');

/**
 * Opaque, signed keyset cursors (docs/api.md, Lists): the position in the listing, a hash of
 * the scope (listing, workspace, filters) and an expiry, under an HMAC. A cursor that was
 * tampered with, has expired, or is presented with other filters or in another workspace is a
 * 400 `invalid_cursor`; the workspace and filters are hashed, never readable from the cursor.
 */
export class CursorCodec {
  constructor(
    private readonly key: Buffer,
    private readonly clock: Clock,
    private readonly ttlMs: number = CURSOR_TTL_MS,
  ) {}

  /** Makes the cursor for the position after `position` in `scope`. */
  encode(position: readonly string[], scope: CursorScope): string {
    const body = b64(Buffer.from(JSON.stringify([1, position, this.scopeHash(scope), Math.floor((this.clock.now() + this.ttlMs) / 1000)])));
    return `${body}.${this.mac(body)}`;
  }

  /** Returns the position a cursor points after; throws `invalid_cursor` if it is not valid for `scope`. */
  decode(cursor: string, scope: CursorScope): string[] {
    const invalid = (why: string) =>
      new FerryError('invalid_cursor', `The cursor is not valid: ${why}.`, {
        errors: [{ pointer: '/cursor', code: 'invalid_cursor', detail: `The cursor is not valid: ${why}.` }],
      });
    const dot = cursor.indexOf('.');
    if (dot <= 0 || cursor.length > 2048) throw invalid('malformed');
    const body = cursor.slice(0, dot);
    // Compare the MAC as text, not decoded: base64url decoding skips stray characters and
    // ignores the last character's spare bits, so two different strings can decode alike.
    const given = Buffer.from(cursor.slice(dot + 1), 'utf8');
    const expected = Buffer.from(this.mac(body), 'utf8');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw invalid('signature mismatch');
    let parsed: unknown;
    try {
      parsed = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
    } catch {
      throw invalid('malformed');
    }
    if (!Array.isArray(parsed) || parsed[0] !== 1 || !Array.isArray(parsed[1]) || !parsed[1].every((p) => typeof p === 'string')) {
      throw invalid('malformed');
    }
    if (parsed[2] !== this.scopeHash(scope)) throw invalid('it belongs to another listing or other filters');
    if (typeof parsed[3] !== 'number' || parsed[3] * 1000 < this.clock.now()) throw invalid('expired');
    return parsed[1] as string[];
  }

  private mac(body: string): string {
    return b64(createHmac('sha256', this.key).update(body).digest().subarray(0, 16));
  }

  private scopeHash(scope: CursorScope): string {
    return b64(createHash('sha256').update(canonical([scope.resource, scope.workspaceId, scope.filters])).digest().subarray(0, 12));
  }
}

/** How one listing pages: its scope, sort key and whether it always hands out a cursor. */
export interface PageSpec<TRow> {
  scope: CursorScope;
  /** The sort-key values of a row, in sort order. */
  key(row: TRow): string[];
  /** Set `next_cursor` whenever data is non-empty, for tailing (the events listing). */
  tail?: boolean;
}

/**
 * Runs one page of a listing: validates `limit`, `order` and `cursor`, fetches, and builds the
 * envelope. The order is bound into the cursor (a `desc` cursor is refused by an `asc` listing
 * and the other way round); an `asc` cursor is spelled as before orders existed, so cursors
 * handed out then stay valid.
 */
export async function paginate<TRow, TOut>(
  codec: CursorCodec,
  params: PageParams,
  spec: PageSpec<TRow>,
  fetch: (after: string[] | undefined, limit: number, order: SortOrder) => Promise<KeysetResult<TRow>>,
  present: (rows: TRow[]) => Promise<TOut[]> | TOut[],
): Promise<Page<TOut>> {
  const limit = normalizeLimit(params.limit);
  const order = normalizeOrder(params.order);
  const scope = order === 'asc' ? spec.scope : { ...spec.scope, filters: { ...spec.scope.filters, order } };
  const after = params.cursor === undefined ? undefined : codec.decode(params.cursor, scope);
  const { rows, hasMore } = await fetch(after, limit, order);
  const last = rows[rows.length - 1];
  const next = last !== undefined && (hasMore || spec.tail) ? codec.encode(spec.key(last), scope) : null;
  return { data: await present(rows), next_cursor: next, has_more: hasMore };
}

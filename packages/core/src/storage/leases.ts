import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { StorageDialect } from './dialect.js';
import { affected, type Db } from './sql-helpers.js';

/** A lease as a write proves it holds it: only the holder of `name` with `token` may commit under it (a pipeline's batches, say). */
export interface Fence {
  name: string;
  token: string;
}

const iso = (ms: number) => new Date(ms).toISOString();

/** A held lease: whoever presents the token owns it until it expires. */
export interface LeaseGrant {
  name: string;
  token: string;
  expires_at: string;
}

/**
 * Named leases (`pipeline:<id>` for a streaming pipeline, `scheduler` ...): at most one holder at
 * a time across every engine sharing the storage. A holder that stops heartbeating loses the
 * lease at expiry and anyone may take it over; its stale token is refused from then on.
 */
export class LeasesRepo {
  constructor(private readonly db: Db, private readonly dialect: StorageDialect) {}

  /** Takes the lease if it is free or expired; null when someone else holds it. */
  async acquire(name: string, holder: string, ttlMs: number, now: number): Promise<LeaseGrant | null> {
    const token = randomUUID();
    const expires = iso(now + ttlMs);
    // One statement, so the check and the take are atomic on both dialects (the row lock on
    // Postgres, the database write lock on SQLite).
    const result = await this.db.raw(
      `INSERT INTO leases (name, holder, token, acquired_at, heartbeat_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, token = excluded.token,
         acquired_at = excluded.acquired_at, heartbeat_at = excluded.heartbeat_at, expires_at = excluded.expires_at
       WHERE leases.expires_at <= ?
       RETURNING token`,
      [name, holder, token, iso(now), iso(now), expires, iso(now)],
    );
    const rows = this.dialect.rows<{ token: string }>(result);
    return rows.length === 1 && rows[0]!.token === token ? { name, token, expires_at: expires } : null;
  }

  /**
   * Extends the lease `token` holds; false only when someone else holds it now (it expired and
   * was taken over). A lease past its expiry that nobody took is renewed: the holder was cut off
   * from storage for a while, nobody else did its work meanwhile, and refusing would make it drop
   * work it still alone owns. The token check is the fence; expiry only lets others take over.
   */
  async heartbeat(name: string, token: string, ttlMs: number, now: number): Promise<boolean> {
    const n = await this.db('leases').where({ name, token }).update({ heartbeat_at: iso(now), expires_at: iso(now + ttlMs) });
    return affected(n) === 1;
  }

  /**
   * True while `token` holds the lease. Call it inside the transaction that commits the holder's
   * work (a batch and its checkpoint): on Postgres the lease row stays locked until that commit,
   * so a takeover cannot slip in between the check and the write (fencing a paused zombie).
   */
  async isHeld(name: string, token: string, now: number): Promise<boolean> {
    const row = await this.db('leases').where({ name, token }).andWhere('expires_at', '>', iso(now)).forUpdate().first('name');
    return row !== undefined;
  }

  /** Gives the lease up; false when the token did not hold it. */
  async release(name: string, token: string): Promise<boolean> {
    return affected(await this.db('leases').where({ name, token }).delete()) === 1;
  }

  /**
   * Ends now every lease `holder` holds, as if it had expired: for a process started again with
   * the instance id of one that has exited, so its work is taken up at once instead of after the
   * lease time. The number of leases ended.
   */
  async expireHeldBy(holder: string, now: number): Promise<number> {
    return affected(await this.db('leases').where({ holder }).andWhere('expires_at', '>', iso(now)).update({ expires_at: iso(now) }));
  }

  /** How many leases whose name starts with `prefix` are held (not expired) at `now`. */
  async countHeld(prefix: string, now: number): Promise<number> {
    // Names are ours (`engine:<id>`), never user input, so the prefix has no LIKE wildcards to escape.
    const row = (await this.db('leases').where('name', 'like', `${prefix}%`).andWhere('expires_at', '>', iso(now)).count({ n: '*' }).first()) as { n: number | string } | undefined;
    return Number(row?.n ?? 0);
  }

  /** The current holder, if any (expired leases included: check `expires_at`). */
  async get(name: string): Promise<{ name: string; holder: string; token: string; expires_at: string } | null> {
    return ((await this.db('leases').where({ name }).first()) as never) ?? null;
  }
}

/** How a leased queue table is laid out. */
export interface LeasedQueueSpec {
  table: string;
  key: string;
}

/** Options of one claim. */
export interface ClaimOptions {
  /** Restricts the claimable rows (due, status ...). */
  where: (query: Knex.QueryBuilder) => void;
  /** Claim order; the oldest due first, usually. */
  orderBy: readonly string[];
  limit: number;
  holder: string;
  ttlMs: number;
  now: number;
}

/** Rows claimed together under one token. */
export interface Claim<TRow> {
  token: string;
  rows: TRow[];
}

/**
 * A table used as a work queue (runs, replays, deliveries): rows are claimed with a lease, so
 * several engines never work on the same row at once, a crashed engine's rows are claimed again
 * after expiry, and a zombie that comes back after the takeover cannot complete them.
 *
 * Postgres claims with `FOR UPDATE SKIP LOCKED` (concurrent claimers skip each other's rows
 * instead of queueing); SQLite has one writer, so the single `UPDATE ... RETURNING` inside the
 * `BEGIN IMMEDIATE` write lock is the compare-and-set.
 */
export class LeasedQueue {
  constructor(
    private readonly db: Db,
    private readonly dialect: StorageDialect,
    private readonly spec: LeasedQueueSpec,
  ) {}

  /** Claims up to `limit` rows that match and are not leased (or whose lease expired). */
  async claim<TRow>(options: ClaimOptions): Promise<Claim<TRow>> {
    const { table, key } = this.spec;
    const token = randomUUID();
    const nowIso = iso(options.now);
    const candidates = this.db(table)
      .select(key)
      .where((q) => options.where(q))
      .andWhere((q) => q.whereNull('lease_expires_at').orWhere('lease_expires_at', '<=', nowIso))
      .limit(options.limit);
    for (const column of options.orderBy) candidates.orderBy(column, 'asc');
    this.dialect.lockForClaim(candidates);
    const rows = (await this.db(table)
      .whereIn(key, candidates)
      .update({ lease_token: token, lease_holder: options.holder, lease_expires_at: iso(options.now + options.ttlMs) })
      .returning('*')) as TRow[];
    return { token, rows };
  }

  /** Extends the lease on one claimed row; false when the token lost it. */
  async heartbeat(id: string, token: string, ttlMs: number, now: number): Promise<boolean> {
    const n = await this.db(this.spec.table)
      .where({ [this.spec.key]: id, lease_token: token })
      .andWhere('lease_expires_at', '>', iso(now))
      .update({ lease_expires_at: iso(now + ttlMs) });
    return affected(n) === 1;
  }

  /**
   * Applies `patch` and ends the lease, only if `token` still holds the row and the lease has
   * not expired; false means the work was taken over and the caller must discard its result.
   */
  async complete(id: string, token: string, patch: Record<string, unknown>, now: number): Promise<boolean> {
    const n = await this.db(this.spec.table)
      .where({ [this.spec.key]: id, lease_token: token })
      .andWhere('lease_expires_at', '>', iso(now))
      .update({ ...patch, lease_token: null, lease_holder: null, lease_expires_at: null });
    return affected(n) === 1;
  }

  /**
   * Updates a claimed row while keeping the lease (progress, counters); false when the token no
   * longer holds it, in which case the caller must stop working on the row.
   */
  async updateHeld(id: string, token: string, patch: Record<string, unknown>, now: number): Promise<boolean> {
    const n = await this.db(this.spec.table)
      .where({ [this.spec.key]: id, lease_token: token })
      .andWhere('lease_expires_at', '>', iso(now))
      .update(patch);
    return affected(n) === 1;
  }

  /** Ends now every claim `holder` holds, as if it had expired (see `LeasesRepo.expireHeldBy`). */
  async expireHeldBy(holder: string, now: number): Promise<number> {
    return affected(
      await this.db(this.spec.table)
        .where({ lease_holder: holder })
        .andWhere('lease_expires_at', '>', iso(now))
        .update({ lease_expires_at: iso(now) }),
    );
  }

  /** Ends the lease without changing the row, so another claimer can take it at once. */
  async release(id: string, token: string): Promise<boolean> {
    const n = await this.db(this.spec.table)
      .where({ [this.spec.key]: id, lease_token: token })
      .update({ lease_token: null, lease_holder: null, lease_expires_at: null });
    return affected(n) === 1;
  }
}

import type { Static, TObject, TSchema } from '@sinclair/typebox';
import type { Clock, ConnectorDirection, ConnectorHealth, Logger } from '../common/index.js';
import type { ConnectorOutbound } from './connector-outbound.js';
import type { ConnectorError } from './connector-error.js';

// The JSON types live with the records, in common/; plugins see them here.
import type { JsonObject, JsonValue } from '../common/index.js';
export type { JsonObject, JsonValue };

// Enumerations of the engine's records too, so defined with them; plugins see them here.
export type { ConnectorDirection, ConnectorHealth };

/** The outcome of a live connection check. */
export interface CheckResult {
  health: ConnectorHealth;
  /** Round-trip time of the check, in milliseconds. */
  latencyMs: number;
  /** Why the check did not pass; must not contain secrets. */
  error?: { code: string; message: string };
  /**
   * Facts the check found worth showing (a replication slot's lag, a server setting), as JSON;
   * returned as `details` by the check route. Must not contain secrets.
   */
  details?: JsonObject;
}

/**
 * A source position. Opaque to the core: the plugin returns it with each batch and gets it back
 * on the next read, after the batch was committed. `null` means "from the beginning".
 */
export type Checkpoint = JsonValue;

/** One record read from a source. */
export interface SourceRecord {
  /**
   * The record's position in the source, unique and stable across re-reads (a row's cursor
   * value, a Kafka partition and offset, an object key and line). The event id is derived from
   * it, so a re-read after a crash yields the same id.
   */
  position: string;
  /** Event type, e.g. `order.created`. */
  type: string;
  /** When the event happened; the read time when the source has no such notion. */
  occurredAt?: string | Date;
  /** Event content. */
  payload: JsonObject;
}

/** What a pull source returns from one read. */
export interface SourceBatch {
  records: SourceRecord[];
  /** The position after the last record; committed with the batch. */
  checkpoint: Checkpoint;
}

/**
 * A source the core drives one batch at a time, reading at most one batch ahead of its
 * destination: the next `read` starts while the batch just read is written, and the one after
 * waits until the destination acknowledged it. A read may be dropped unused (a pause, a config
 * change) and asked for again.
 */
export interface PullSource {
  /**
   * Reads up to `max` records after `checkpoint`; an empty `records` means caught up. A read is
   * not an acknowledgement: the batch before `checkpoint` may still be committing, and after a
   * failure or a crash the core reads again from an earlier checkpoint. Never delete or
   * acknowledge anything in the source system because of a read.
   */
  read(checkpoint: Checkpoint | null, max: number, signal: AbortSignal): Promise<SourceBatch>;
  /** Releases connections. */
  close?(): Promise<void>;
}

/**
 * A source that pushes (Kafka, an inbox, a replication stream). The core passes a handler whose
 * promise resolves once the batch is committed (its events logged, the checkpoint after it
 * stored): only then may the source acknowledge the batch upstream. Awaiting each call before
 * taking more is the simple backpressure. A source may also hand over the next batch before the
 * last call resolved, to have it written while the last one commits: the core takes batches
 * through the destination and commits them in the order of the calls, resolves the calls in that
 * order, and a call after one that failed fails too. Keep at most two calls outstanding.
 * `consume` resolves when `signal` aborts.
 */
export interface PushSource {
  consume(
    from: Checkpoint | null,
    handler: (batch: SourceBatch) => Promise<void>,
    signal: AbortSignal,
  ): Promise<void>;
  /** Releases connections. */
  close?(): Promise<void>;
}

/** A source is either pulled or pushes with an awaited handler. */
export type Source = PullSource | PushSource;

/** One event handed to a destination. */
export interface DestinationEvent {
  /** Stable event id (derived from the source position): use it to make writes idempotent. */
  id: string;
  type: string;
  /** ISO 8601 UTC. */
  occurredAt: string;
  payload: JsonObject;
}

/** The outcome of writing one event. */
export type WriteResult = { ok: true } | { ok: false; error: ConnectorError };

/**
 * A destination. `write` returns one result per event, in order; a per-record rejection is an
 * `ok: false` result, while a failure of the whole batch (unreachable, throttled) is a thrown
 * error with `retryable: true`.
 */
export interface Destination {
  write(events: readonly DestinationEvent[], signal: AbortSignal): Promise<WriteResult[]>;
  /**
   * Optional: makes ahead of time what `write` will send for `events` (a COPY's text, a request
   * body), while the batch before is still being written, so the destination does not wait for
   * it. A hint, never a promise: `write` may be called later with this very array (then it may
   * use what it made, looked up by the array), with another, or not at all. Must not throw,
   * send anything or hold much beyond what a later `write` takes.
   */
  prepare?(events: readonly DestinationEvent[]): void;
  /** Releases connections. */
  close?(): Promise<void>;
}

/** What every plugin call receives. */
export interface ConnectorContext<TConfig> {
  /** The connector's config with secrets decrypted and schema defaults applied. */
  readonly config: TConfig;
  readonly connectorId: string;
  readonly workspaceId: string;
  /**
   * The direction the connector was created with: what a `check` has to prove (a source's table
   * can be read, a destination's written). A pipeline opens `source` or `destination` as the
   * side it needs, whatever this says (`bidirectional` connectors are opened as either).
   */
  readonly direction: ConnectorDirection;
  readonly logger: Logger;
  readonly clock: Clock;
  /** Aborted when the engine stops or the call is no longer wanted. */
  readonly signal: AbortSignal;
  /**
   * The engine's outbound policy (its `outboundAllow`): every connection the plugin or its driver
   * opens must go through it (its `lookup`, `connect`, `socket` or `agent`), so a host that is,
   * or resolves to, a private, loopback, link-local or metadata address gets no byte unless
   * allowed. Refusals are non-retryable `url_not_allowed` errors.
   */
  readonly outbound: ConnectorOutbound;
}

/**
 * Events the engine received for a connector on `POST /v2/ingest/{connector_id}` (docs/api.md,
 * Ingest: webhook sources), stored durably before the sender got its 202. A source whose events are pushed to
 * the engine over HTTP reads them from here, in arrival order.
 */
export interface ConnectorInbox {
  /**
   * Up to `max` events after `checkpoint` (`null`: from the first), oldest first. Each record's
   * position is its place in the inbox; the batch's checkpoint is the position of its last one.
   */
  read(checkpoint: Checkpoint | null, max: number): Promise<SourceBatch>;
}

/** The context of a source or destination opened for one pipeline. */
export interface PipelineConnectorContext<TConfig> extends ConnectorContext<TConfig> {
  readonly pipelineId: string;
  /** This connector's inbox (see {@link ConnectorInbox}). */
  readonly inbox: ConnectorInbox;
  /**
   * Reports how much the source system holds back for this pipeline, in bytes (a replication
   * slot's WAL between the server's end and the confirmed position). The engine keeps the last
   * value per pipeline (`engine.sourceLag()`, and `ferry_source_lag_bytes` on `/metrics`) until
   * the source is closed. Optional: sources with no such notion never call it.
   */
  readonly reportLag?: (bytes: number) => void;
  /**
   * The backfills asked of this pipeline's source (`POST /v2/pipelines/{id}/backfills`), as of
   * its opening: the source runs them one at a time, in this order, and reports on each with
   * {@link reportBackfill}. The engine opens the source again when one is asked for or cancelled.
   * Absent for sources opened outside a pipeline's flow, and for types without `planBackfill`
   * (nothing can be asked of them).
   */
  readonly backfills?: BackfillRequests;
  /**
   * Reports how far a backfill (a re-read of what the source system holds: one asked for, or one
   * the source started itself, such as an incremental first snapshot) has come, as of the last
   * batch committed, and how it ended. The engine records it (`GET /v2/backfills/{id}`, creating
   * the record of a backfill it has not heard of), emits `backfill.started`, `.completed` and
   * `.failed`, and keeps the running one's figures per pipeline for `/metrics`. Report each
   * state change once it is committed, and again after a restart if it may not have been heard:
   * reports are idempotent, and an ended backfill stays ended. Optional: sources that never
   * re-read anything never call it.
   */
  readonly reportBackfill?: (report: BackfillReport) => void;
}

/** The backfills asked of a source (see {@link PipelineConnectorContext.backfills}). */
export interface BackfillRequests {
  /** Those still to run or running (`queued` or `running`), oldest first. */
  readonly requested: readonly BackfillRequest[];
  /** Ids of backfills cancelled lately: a source that was reading one drops it. */
  readonly cancelled: ReadonlySet<string>;
}

/** A backfill asked of a source, as `planBackfill` accepted it. */
export interface BackfillRequest {
  /** `bfl_` and 26 characters: what its events' `metadata.backfill_id` and reports name. */
  readonly id: string;
  /** The tables to read, in this order, as `planBackfill` named them. */
  readonly tables: readonly string[];
  /** A row filter per table (a table with none is read whole), as given: check it again before use. */
  readonly where: Readonly<Record<string, string>> | null;
  /** Rows per chunk; null: the source's own batch size. */
  readonly chunkSize: number | null;
}

/** How far a backfill has come, as a source reports it (see {@link PipelineConnectorContext.reportBackfill}). */
export interface BackfillReport {
  /** The backfill's id (its events' `metadata.backfill_id`). */
  readonly id: string;
  readonly state: 'running' | 'succeeded' | 'failed';
  /** Every table it reads, in order, with rows handed over and committed so far. */
  readonly tables: ReadonlyArray<{ readonly table: string; readonly rowsRead: number; readonly rowsEstimated: number | null; readonly state: 'pending' | 'running' | 'done' }>;
  /** Why it failed (state `failed`); must not contain secrets. */
  readonly error?: { readonly code: string; readonly message: string };
}

/** What a backfill asks a source to read, before it is accepted (see `ConnectorDefinition.planBackfill`). */
export interface BackfillPlanInput {
  /** The tables asked for; null: every table the source reads. */
  readonly tables: readonly string[] | null;
  readonly where: Readonly<Record<string, string>> | null;
  readonly chunkSize: number | null;
}

/** A backfill a source accepted: the tables it will read, in order, by the names it reports. */
export interface BackfillPlan {
  readonly tables: ReadonlyArray<{ readonly table: string; readonly rowsEstimated: number | null }>;
  /** The row filters, by those names (a source may spell a table the user named otherwise); absent: as given. */
  readonly where?: Readonly<Record<string, string>>;
}

/** Input of a credential rotation (docs/api.md, Connector rotation). */
export interface RotateInput<TConfig> {
  /** New secret fields supplied by the caller; absent when the plugin must generate them. */
  config?: Partial<TConfig>;
}

/**
 * A connector type: a plain object, usually returned by a factory so it can take options.
 * Build it with {@link defineConnector} for full type inference.
 */
export interface ConnectorDefinition<TSchemaT extends TObject = TObject> {
  /** Type name as used in the API (`postgres`, `s3`, ...). Unique per engine. */
  readonly type: string;
  /** Plugin version (semver). */
  readonly version: string;
  /** The directions this type supports. List `bidirectional` only if it may be both at once. */
  readonly directions: readonly ConnectorDirection[];
  /** TypeBox schema of the config; mark secret fields with `Secret(...)`. */
  readonly configSchema: TSchemaT;
  /**
   * A top-level secret field the connector's owner must be able to read back, because the other
   * side needs it and the connector may generate it (a webhook source's `signing_secret`, which
   * senders sign with). When the connector generates it (`prepareConfig` on create, `rotate`
   * without supplied fields), the response of that create or rotate shows it in clear, once;
   * afterwards `GET /v2/connectors/{id}/signing-secret` reads it. Like every secret it is
   * encrypted at rest and `"********"` everywhere else. Leave it unset for credentials only
   * Ferry uses (passwords, keys): those are never shown.
   */
  readonly readableSecret?: string;
  /**
   * Rules the schema cannot say, for a config the schema accepted (defaults applied): typically
   * the fields one direction needs (a destination's `url`, a source's `cursor_column`). Returns
   * field problems with pointers relative to the config; called on create and on every update.
   * `outbound` is the engine's outbound policy: report a host it refuses whatever DNS says
   * (`outbound.hostProblem`, `outbound.urlProblem`) with code `url_not_allowed`, and the engine
   * answers 422 `url_not_allowed` (when that is the only kind of problem) instead of 400.
   */
  validateConfig?(config: Static<TSchemaT>, direction: ConnectorDirection, outbound: ConnectorOutbound): { pointer: string; code: string; detail: string }[];
  /**
   * Completes a new connector's config before it is validated and stored: fills in what the
   * connector generates itself (a webhook's signing secret). Called on create only, with a config
   * the schema accepted; must not perform I/O. Returns the config to store.
   */
  prepareConfig?(config: Static<TSchemaT>, direction: ConnectorDirection): Static<TSchemaT>;
  /** A live connection check. */
  check?(ctx: ConnectorContext<Static<TSchemaT>>): Promise<CheckResult>;
  /** Opens the source side for one pipeline. */
  source?(ctx: PipelineConnectorContext<Static<TSchemaT>>): Source | Promise<Source>;
  /**
   * Releases what the source side keeps in the source system for one pipeline (a replication
   * slot, which holds WAL until it is dropped; a publication), when that pipeline is deleted.
   * Called once nothing of the pipeline runs any more, with its last committed checkpoint; the
   * deletion completes when it resolves, so a pipeline of a type with this hook is always
   * `deleting` first (202). A retryable error (the source is unreachable) keeps it `deleting`
   * and the engine tries again at its next poll, for up to a day; a non-retryable error, or a
   * day of retryable ones, completes the deletion without it, and `connector.error` says what
   * may be left behind. Kept while the pipeline is only paused.
   */
  releaseSource?(ctx: PipelineConnectorContext<Static<TSchemaT>>, checkpoint: Checkpoint | null): Promise<void>;
  /**
   * Checks a backfill asked of this source for one pipeline (`POST /v2/pipelines/{id}/backfills`)
   * before it is recorded: the tables exist and are the pipeline's, each has a key to read it in
   * chunks, each `where` parses and uses only what is allowed. Returns the tables in reading
   * order with the source's estimate of their rows. Refuse with a non-retryable
   * {@link ConnectorError}: `unknown_table` (400), `backfill_needs_key`, `invalid_where`,
   * `backfill_unsupported` (422); a retryable one answers 503. Without this hook the source type
   * cannot backfill (422 `backfill_unsupported`).
   */
  planBackfill?(ctx: PipelineConnectorContext<Static<TSchemaT>>, input: BackfillPlanInput): Promise<BackfillPlan>;
  /** Opens the destination side for one pipeline. */
  destination?(ctx: PipelineConnectorContext<Static<TSchemaT>>): Destination | Promise<Destination>;
  /**
   * Produces new secret fields: validates supplied ones, or generates them when `input.config`
   * is absent. Throws a non-retryable {@link ConnectorError} when it cannot.
   */
  rotate?(ctx: ConnectorContext<Static<TSchemaT>>, input: RotateInput<Static<TSchemaT>>): Promise<Partial<Static<TSchemaT>>>;
}

/** Any connector definition, whatever its config type. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyConnectorDefinition = ConnectorDefinition<any>;

/** An event as the transform steps see it. */
export interface TransformEvent {
  id: string;
  type: string;
  occurredAt: string;
  payload: JsonObject;
}

/** What a transform step receives besides the event and its own definition. */
export interface TransformContext {
  readonly pipelineId: string;
  readonly workspaceId: string;
  /** A stable per-pipeline salt, e.g. for hashing. */
  readonly salt: string;
}

/** The outcome of a step: the (possibly changed) event, or `null` to filter it out. */
export type TransformOutcome = TransformEvent | null;

/** A transform step type. Build it with {@link defineTransform}. */
export interface TransformDefinition<TStep extends TSchema = TSchema> {
  /** The `type` value of the step in a pipeline's `transforms` array. */
  readonly type: string;
  /** Schema of the step definition, including its `type` literal. */
  readonly schema: TStep;
  /**
   * Rules the schema cannot say (a regular expression that does not compile, ...): returns
   * field problems as `{ pointer relative to the step, code, detail }`.
   */
  validate?(step: Static<TStep>): { pointer: string; code: string; detail: string }[];
  /** Applies the step. Throwing sends the event to the dead-letter state at this stage. */
  apply(event: TransformEvent, step: Static<TStep>, ctx: TransformContext): TransformOutcome | Promise<TransformOutcome>;
}

/** Any transform definition. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyTransformDefinition = TransformDefinition<any>;

/** A plugin: a connector type or a transform step type. */
export type FerryPlugin = AnyConnectorDefinition | AnyTransformDefinition;

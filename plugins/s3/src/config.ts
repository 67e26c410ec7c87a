import { Secret, type ConnectorDirection, type ConnectorOutbound } from '@ferry/core';
import { Type, type Static } from '@sinclair/typebox';

/** Default region: the SDK needs one even when the endpoint is not AWS. */
export const DEFAULT_REGION = 'us-east-1';
/** Default largest object a destination writes, in bytes (8 MiB, as the README says). */
export const DEFAULT_MAX_BATCH_BYTES = 8 * 1024 * 1024;
/** Smallest part S3 accepts in a multipart upload, and so the smallest `max_batch_bytes` worth splitting at. */
export const MIN_PART_BYTES = 5 * 1024 * 1024;

/**
 * The `s3` connector's config, as its README's Config table describes it (docs/api.md, Connector
 * types: these keys are fixed; options may be added, never renamed). What each direction needs is checked by {@link validateS3Config}.
 */
export const s3ConfigSchema = Type.Object(
  {
    bucket: Type.String({ minLength: 3, maxLength: 63, pattern: '^[a-z0-9][a-z0-9.-]*[a-z0-9]$', description: 'Bucket name (3-63 lower-case letters, digits, dots and hyphens).' }),
    prefix: Type.Optional(Type.String({ maxLength: 900, default: '', description: 'Key prefix, e.g. `events/`; written objects go under it, a source reads under it.' })),
    region: Type.Optional(Type.String({ minLength: 1, maxLength: 50, default: DEFAULT_REGION })),
    endpoint: Type.Optional(Type.String({ minLength: 1, maxLength: 2048, description: 'An S3-compatible store: `https://host[:port]`.' })),
    force_path_style: Type.Optional(Type.Boolean({ default: false, description: '`host/bucket/key` instead of `bucket.host/key`, as most S3-compatible stores need.' })),
    // Secret too, like secret_access_key: a rotation replaces the pair, and only secret fields
    // may be rotated.
    access_key_id: Type.Optional(Secret(Type.String({ minLength: 1, maxLength: 128 }))),
    secret_access_key: Type.Optional(Secret(Type.String({ minLength: 1, maxLength: 256 }))),
    session_token: Type.Optional(Secret(Type.String({ minLength: 1, maxLength: 4096 }))),
    role_arn: Type.Optional(Type.String({ minLength: 20, maxLength: 2048, pattern: '^arn:aws[a-z-]*:iam::[0-9]{12}:role/.+$' })),
    external_id: Type.Optional(Type.String({ minLength: 2, maxLength: 1224 })),
    format: Type.Optional(Type.Union([Type.Literal('jsonl'), Type.Literal('json')], { default: 'jsonl' })),
    compression: Type.Optional(Type.Union([Type.Literal('none'), Type.Literal('gzip')], { default: 'none' })),
    checksums: Type.Optional(
      Type.Union([Type.Literal('when_supported'), Type.Literal('when_required')], {
        default: 'when_supported',
        description: '`when_required` for S3-compatible stores that mishandle the SDK\'s default request checksums.',
      }),
    ),
    max_batch_bytes: Type.Optional(Type.Integer({ minimum: 1024, maximum: 5 * 1024 * 1024 * 1024, default: DEFAULT_MAX_BATCH_BYTES })),
    type: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Source: the event type of lines that carry none.' })),
  },
  { additionalProperties: false },
);

/** The config as the plugin sees it. */
export type S3Config = Static<typeof s3ConfigSchema>;

/** A config problem, pointer relative to the config. */
export interface ConfigProblem {
  pointer: string;
  code: string;
  detail: string;
}

/**
 * Rules the schema cannot say. Details name the field, never its value. With the engine's
 * `outbound` policy, an `endpoint` it refuses whatever DNS says (http to a host not allowed, a
 * literal private, loopback or metadata address, `localhost`) is a `url_not_allowed` problem.
 */
export function validateS3Config(config: S3Config, direction: ConnectorDirection, outbound?: ConnectorOutbound): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const problem = (pointer: string, code: string, detail: string) => problems.push({ pointer, code, detail });
  if ((config.access_key_id === undefined) !== (config.secret_access_key === undefined)) {
    problem(config.access_key_id === undefined ? '/access_key_id' : '/secret_access_key', 'required', 'Give access_key_id and secret_access_key together.');
  }
  if (config.session_token !== undefined && config.access_key_id === undefined) problem('/session_token', 'not_applicable', 'session_token goes with access_key_id and secret_access_key.');
  if (config.external_id !== undefined && config.role_arn === undefined) problem('/external_id', 'not_applicable', 'external_id goes with role_arn.');
  if (config.endpoint !== undefined && !isHttpUrl(config.endpoint)) problem('/endpoint', 'format', 'Expected an http:// or https:// URL.');
  else if (config.endpoint !== undefined && outbound) {
    const refused = outbound.urlProblem(config.endpoint);
    if (refused) problem('/endpoint', 'url_not_allowed', refused);
  }
  if (direction === 'destination' && config.type !== undefined) problem('/type', 'not_applicable', 'type is for sources; a destination writes each event with its own type.');
  return problems;
}

function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return (url.protocol === 'https:' || url.protocol === 'http:') && url.username === '' && url.password === '';
  } catch {
    return false;
  }
}

import { DOT_PATH_PATTERN, DotPath, Secret, type ConnectorDirection, type ConnectorOutbound } from '@ferry/core';
import { Type, type Static } from '@sinclair/typebox';

/** Default client id sent to the brokers (it names the client in their logs and quotas). */
export const DEFAULT_CLIENT_ID = 'ferry';
/** Default most records a source hands over as one batch. */
export const DEFAULT_SOURCE_BATCH_SIZE = 1000;
/** Default largest message a destination sends, in bytes: a broker's default `message.max.bytes` (1 MiB). */
export const DEFAULT_MAX_MESSAGE_BYTES = 1024 * 1024;
/** Default type of a consumed message that carries none (no Ferry header, no `type_header`, `type_path` or `type`). */
export const DEFAULT_SOURCE_TYPE = 'kafka.message';

/** `host:port`, a name or an IPv4 address, or `[v6]:port`. */
const BROKER = '^(\\[[0-9A-Fa-f:.]+\\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?):[0-9]{1,5}$';
/** A topic name as Kafka allows it. */
const TOPIC = Type.String({ minLength: 1, maxLength: 249, pattern: '^[A-Za-z0-9._-]+$' });

/**
 * The `kafka` connector's config, as its README's Config table describes it (docs/api.md,
 * Connector types: these keys are fixed; options may be added, never renamed). What each direction needs is checked by {@link validateKafkaConfig}.
 */
export const kafkaConfigSchema = Type.Object(
  {
    brokers: Type.Array(Type.String({ pattern: BROKER, maxLength: 260 }), { minItems: 1, maxItems: 100, description: 'Bootstrap brokers, `host:port`.' }),
    client_id: Type.Optional(Type.String({ minLength: 1, maxLength: 200, default: DEFAULT_CLIENT_ID })),
    ssl: Type.Optional(
      Type.Union(
        [
          Type.Boolean(),
          Type.Object(
            {
              ca: Type.Optional(Type.String({ minLength: 1, maxLength: 65_536, description: 'PEM of the CA that signed the brokers\' certificates.' })),
              reject_unauthorized: Type.Optional(Type.Boolean({ description: 'false accepts any certificate: for tests only.' })),
              cert: Type.Optional(Type.String({ minLength: 1, maxLength: 65_536, description: 'PEM client certificate (mutual TLS).' })),
              key: Type.Optional(Secret(Type.String({ minLength: 1, maxLength: 65_536, description: 'PEM private key of `cert`.' }))),
              passphrase: Type.Optional(Secret(Type.String({ minLength: 1, maxLength: 1024 }))),
            },
            { additionalProperties: false },
          ),
        ],
        { default: false },
      ),
    ),
    sasl: Type.Optional(
      Type.Object(
        {
          mechanism: Type.Union([Type.Literal('plain'), Type.Literal('scram-sha-256'), Type.Literal('scram-sha-512')]),
          username: Type.String({ minLength: 1, maxLength: 512 }),
          password: Secret(Type.String({ minLength: 1, maxLength: 4096 })),
        },
        { additionalProperties: false },
      ),
    ),
    connection_timeout_ms: Type.Optional(Type.Integer({ minimum: 100, maximum: 120_000, default: 10_000 })),
    request_timeout_ms: Type.Optional(Type.Integer({ minimum: 100, maximum: 600_000, default: 30_000 })),

    // Source.
    topics: Type.Optional(Type.Array(TOPIC, { minItems: 1, maxItems: 100, uniqueItems: true })),
    group_id: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'Consumer group; default `ferry-<pipeline id>`.' })),
    from_beginning: Type.Optional(Type.Boolean({ default: false, description: 'A new group starts at the oldest message instead of the newest.' })),
    type: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Event type of messages whose value and headers name none.' })),
    type_path: Type.Optional(DotPath('Dot path of the event type in a JSON value, e.g. `meta.kind`.')),
    type_header: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Header carrying the event type.' })),
    batch_size: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000, default: DEFAULT_SOURCE_BATCH_SIZE })),

    // Destination.
    topic: Type.Optional(TOPIC),
    key: Type.Optional(
      Type.String({ pattern: `^(?:event_id|payload\\.${DOT_PATH_PATTERN.slice(1, -1)})$`, maxLength: 300, default: 'event_id', description: '`event_id`, or `payload.<path>` for a field of the payload.' }),
    ),
    acks: Type.Optional(Type.Union([Type.Literal(-1), Type.Literal(0), Type.Literal(1)], { default: -1, description: '-1: all in-sync replicas; 1: the leader; 0: none.' })),
    compression: Type.Optional(Type.Union([Type.Literal('none'), Type.Literal('gzip')], { default: 'none' })),
    max_message_bytes: Type.Optional(Type.Integer({ minimum: 1024, maximum: 100 * 1024 * 1024, default: DEFAULT_MAX_MESSAGE_BYTES })),
  },
  { additionalProperties: false },
);

/** The config as the plugin sees it. */
export type KafkaConfig = Static<typeof kafkaConfigSchema>;

/** A config problem, pointer relative to the config. */
export interface ConfigProblem {
  pointer: string;
  code: string;
  detail: string;
}

const SOURCE_ONLY = ['topics', 'group_id', 'from_beginning', 'type', 'type_path', 'type_header'] as const;
const DESTINATION_ONLY = ['topic'] as const;

/**
 * A broker's host and port: `host:port` or `[v6]:port` (the brackets dropped).
 */
export function brokerAddress(broker: string): { host: string; port: number } {
  const at = broker.lastIndexOf(':');
  return { host: broker.slice(0, at).replace(/^\[|\]$/g, ''), port: Number(broker.slice(at + 1)) };
}

/**
 * Rules the schema cannot say. Details name the field, never its value. With the engine's
 * `outbound` policy, a broker whose host it refuses whatever DNS says (a literal private,
 * loopback or metadata address in any spelling, `localhost`) is a `url_not_allowed` problem.
 */
export function validateKafkaConfig(config: KafkaConfig, direction: ConnectorDirection, outbound?: ConnectorOutbound): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const problem = (pointer: string, code: string, detail: string) => problems.push({ pointer, code, detail });
  const reads = direction === 'source' || direction === 'bidirectional';
  const writes = direction === 'destination' || direction === 'bidirectional';
  if (reads && config.topics === undefined) problem('/topics', 'required', 'A source consumes `topics`.');
  if (writes && config.topic === undefined) problem('/topic', 'required', 'A destination produces to `topic`.');
  if (!reads) for (const key of SOURCE_ONLY) if (config[key] !== undefined && !(key === 'from_beginning' && config[key] === false)) problem(`/${key}`, 'not_applicable', `${key} is for sources.`);
  if (!writes) for (const key of DESTINATION_ONLY) if (config[key] !== undefined) problem(`/${key}`, 'not_applicable', `${key} is for destinations.`);
  if (outbound) {
    config.brokers.forEach((broker, i) => {
      const refused = outbound.hostProblem(brokerAddress(broker).host);
      if (refused) problem(`/brokers/${i}`, 'url_not_allowed', refused);
    });
  }
  if (typeof config.ssl === 'object' && (config.ssl.cert === undefined) !== (config.ssl.key === undefined)) {
    problem(config.ssl.cert === undefined ? '/ssl/cert' : '/ssl/key', 'required', 'Give ssl.cert and ssl.key together.');
  }
  return problems;
}

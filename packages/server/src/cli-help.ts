import { API_RATE_LIMIT_DEFAULTS, LOG_LEVELS, MAX_WORKERS, SETTING_DEFAULTS } from './settings.js';

/** What `ferry keys create` uses when `--workspace` or `--scopes` is not given. */
export const KEY_DEFAULTS = { workspace: 'default', scopes: 'write' } as const;

/** Something `ferry help <topic>` and `ferry <topic> --help` explain: a command, the `keys` group, or one of its commands. */
export type HelpTopic = 'serve' | 'migrate' | 'keys' | 'keys create' | 'keys list' | 'keys revoke' | 'secret-key';

/** The commands of the `keys` group. */
export const KEY_COMMANDS = ['create', 'list', 'revoke'] as const;

/** An option as a help page shows it. */
interface OptionHelp {
  /** The flag and the shape of its value: `--port N`. */
  flag: string;
  description: string;
  /** What applies without the option, shown as `(default: ...)`. */
  default: string;
}

/** A help page of one topic. */
interface TopicHelp {
  /** What follows `ferry ` in the usage line. */
  usage: string;
  /** What the command does, in a line; also its line in the list of commands. */
  summary: string;
  /** More on what it does, when a line is not enough. */
  details?: string;
  options: readonly OptionHelp[];
  /** The commands of a group, each with a page of its own. */
  commands?: readonly HelpTopic[];
  /** The variables the command reads: its page shows these and no others. */
  environment: readonly EnvironmentVariable[];
  examples: readonly string[];
}

/**
 * Every environment variable a command reads, with what it means. A variable that a flag also
 * sets says so, and its default is the flag's.
 */
const ENVIRONMENT = {
  FERRY_PORT: 'Same as --port',
  FERRY_HOST: 'Same as --host',
  DATABASE_URL: 'Same as --database',
  FERRY_SECRET_KEY: 'Key-encryption key of connector secrets; required with Postgres (default: generated once into <database file>.key for SQLite)',
  FERRY_BOOTSTRAP_API_KEY: 'An API key made sure to exist at start, in workspace default with scope write (default: none)',
  FERRY_ROLE: 'Same as --role',
  FERRY_WORKERS: 'Same as --workers',
  FERRY_CONSOLE: 'Same as --console',
  FERRY_LOG_LEVEL: 'Same as --log-level',
  FERRY_RATE_LIMIT: 'Same as --rate-limit',
  FERRY_INGEST_RATE_LIMIT: 'Same as --ingest-rate-limit',
  FERRY_RETENTION_DAYS: 'Same as --retention-days',
  FERRY_OUTBOUND_ALLOW: 'Same as --outbound-allow',
  FERRY_INSTANCE_ID: 'Same as --instance-id',
} as const;

/** A variable of {@link ENVIRONMENT}. */
type EnvironmentVariable = keyof typeof ENVIRONMENT;

const DATABASE_OPTION: OptionHelp = { flag: '--database URL|FILE', description: 'A postgres:// URL, or a SQLite file', default: SETTING_DEFAULTS.database };

/** What the commands that open storage without serving read: where it is, and its key. */
const STORAGE_ENVIRONMENT: readonly EnvironmentVariable[] = ['DATABASE_URL', 'FERRY_SECRET_KEY'];

const POSTGRES = 'DATABASE_URL=postgres://ferry@db/ferry FERRY_SECRET_KEY=<key>';

const TOPICS: Record<HelpTopic, TopicHelp> = {
  serve: {
    usage: 'serve [options]',
    summary: 'Serve the /v2 API and the console until SIGTERM or SIGINT',
    details:
      'Runs the engine with every connector plugin, and with it the work (pipelines, schedules, replays, webhook deliveries), the /v2 API, the console at /console, GET /healthz and GET /metrics. Logs are JSON lines on stdout.',
    options: [
      { flag: '--port N', description: 'Listen port; 0 picks a free one', default: String(SETTING_DEFAULTS.port) },
      { flag: '--host H', description: 'Listen address; 0.0.0.0 in a container', default: SETTING_DEFAULTS.host },
      DATABASE_OPTION,
      { flag: '--role all|api|worker', description: 'all: the API and the work; api or worker: one of them', default: SETTING_DEFAULTS.role },
      { flag: '--workers N', description: `Worker processes started beside this one, 0 to ${MAX_WORKERS}`, default: String(SETTING_DEFAULTS.workers) },
      { flag: '--console on|off', description: 'Serve the console at /console', default: SETTING_DEFAULTS.console },
      { flag: '--log-level L', description: LOG_LEVELS.join(', '), default: SETTING_DEFAULTS.logLevel },
      { flag: '--rate-limit N/S|off', description: 'Requests per API key in S seconds', default: API_RATE_LIMIT_DEFAULTS.api },
      { flag: '--ingest-rate-limit N/S|off', description: 'Requests per webhook source connector in S seconds', default: API_RATE_LIMIT_DEFAULTS.ingest },
      { flag: '--retention-days N', description: 'Days to keep finished events, runs, deliveries', default: 'forever' },
      { flag: '--outbound-allow LIST', description: 'Hosts, IPs, CIDRs, * exempt from the outbound policy', default: 'none' },
      { flag: '--instance-id ID', description: "This engine's id as a holder of leases", default: 'random' },
    ],
    environment: Object.keys(ENVIRONMENT) as EnvironmentVariable[],
    examples: ['ferry serve --port 8080', 'ferry serve --host 0.0.0.0 --database /var/lib/ferry/ferry.db', `${POSTGRES} ferry serve --workers 3`],
  },
  migrate: {
    usage: 'migrate [options]',
    summary: 'Apply the storage migrations and exit',
    details: '`ferry serve` applies them at start too; this is for a deploy step of its own.',
    options: [DATABASE_OPTION],
    environment: ['DATABASE_URL'],
    examples: ['ferry migrate --database ./ferry.db', 'DATABASE_URL=postgres://ferry@db/ferry ferry migrate'],
  },
  keys: {
    usage: 'keys <command> [options]',
    summary: 'Create, list and revoke API keys',
    details: 'They may run while a server is serving the same database.',
    options: [],
    commands: ['keys create', 'keys list', 'keys revoke'],
    environment: STORAGE_ENVIRONMENT,
    examples: ['ferry keys create --scopes pipelines:read', 'ferry keys list', 'ferry keys revoke AbCd1234'],
  },
  'keys create': {
    usage: 'keys create [options]',
    summary: 'Create an API key; the key alone is the last line of output',
    details: 'The key is shown this once: only its hash is stored.',
    options: [
      { flag: '--workspace W', description: "The key's workspace, created if missing", default: KEY_DEFAULTS.workspace },
      { flag: '--scopes LIST', description: 'Comma-separated: read, write, pipelines:read, ...', default: KEY_DEFAULTS.scopes },
      { flag: '--name N', description: 'A name to tell the key by', default: 'none' },
      { flag: '--rate-limit N/S', description: "The key's own limit, in place of the server's", default: "the server's" },
      DATABASE_OPTION,
    ],
    environment: STORAGE_ENVIRONMENT,
    examples: ['ferry keys create --scopes pipelines:read', 'KEY=$(ferry keys create --name ci | tail -1)'],
  },
  'keys list': {
    usage: 'keys list [options]',
    summary: 'List the API keys of a workspace, never their secrets',
    details: 'One line per key: id, key id, name, scopes, created, last used, status.',
    options: [{ flag: '--workspace W', description: 'The workspace whose keys to list', default: KEY_DEFAULTS.workspace }, DATABASE_OPTION],
    environment: STORAGE_ENVIRONMENT,
    examples: ['ferry keys list', `${POSTGRES} ferry keys list --workspace acme`],
  },
  'keys revoke': {
    usage: 'keys revoke <key id> [options]',
    summary: 'Revoke an API key at once',
    details: '<key id> is the key_... id or the 8-character key id (the key\'s characters 5 to 12).',
    options: [{ flag: '--workspace W', description: "The key's workspace", default: KEY_DEFAULTS.workspace }, DATABASE_OPTION],
    environment: STORAGE_ENVIRONMENT,
    examples: ['ferry keys revoke AbCd1234'],
  },
  'secret-key': {
    usage: 'secret-key',
    summary: 'Print a new key-encryption key for FERRY_SECRET_KEY',
    details: 'Keep it with the database: every server on it needs the same key, and stored connector secrets cannot be opened without it.',
    options: [],
    environment: [],
    examples: ['ferry secret-key > secret.key'],
  },
};

/** Whether `name` is a topic `ferry help <name>` explains. */
export function isHelpTopic(name: string): name is HelpTopic {
  return Object.hasOwn(TOPICS, name);
}

/** The environment variables a topic's help lists, which are those its command reads. */
export function helpEnvironment(topic: HelpTopic): readonly string[] {
  return TOPICS[topic].environment;
}

/** The widest a help line gets before its text wraps. */
const WIDTH = 100;

/** Joins words that {@link wrap} keeps on one line: `(default: 8080)` is not split after its colon. */
const GLUE = '\u0000';

/** Words of `text` in lines of at most `width` characters (a longer word stands alone). */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ').map((part) => part.replaceAll(GLUE, ' '))) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line === '' ? word : `${line} ${word}`;
    }
  }
  return [...lines, line];
}

/**
 * Two columns, the second wrapped and aligned after the widest first: the layout of a list of
 * commands, options or variables.
 */
function columns(rows: readonly (readonly [string, string])[]): string {
  const left = Math.max(...rows.map(([name]) => name.length)) + 4;
  return rows
    .flatMap(([name, text]) => wrap(text, WIDTH - left).map((part, i) => (i === 0 ? `  ${name}`.padEnd(left) : ' '.repeat(left)) + part))
    .join('\n');
}

function optionRows(options: readonly OptionHelp[]): [string, string][] {
  return options.map((option) => [option.flag, `${option.description} (default:${GLUE}${option.default.replaceAll(' ', GLUE)})`]);
}

function section(title: string, body: string): string {
  return `${title}:\n${body}`;
}

function environmentSection(variables: readonly EnvironmentVariable[]): string {
  return section('Environment (a flag wins over its variable)', columns(variables.map((name) => [name, ENVIRONMENT[name]])));
}

function examplesSection(examples: readonly string[]): string {
  return section('Examples', examples.map((example) => `  $ ${example}`).join('\n'));
}

/** The usage line, what the topic does, and the sections of its page that have something in them. */
function topicPage(topic: HelpTopic): string {
  const help = TOPICS[topic];
  const parts = [`Usage: ferry ${help.usage}`, wrap(help.details === undefined ? `${help.summary}.` : `${help.summary}. ${help.details}`, WIDTH).join('\n')];
  if (help.commands) {
    parts.push(section('Commands', columns(help.commands.map((command) => [TOPICS[command].usage.replace(/ \[options\]$/, ''), TOPICS[command].summary]))));
    parts.push(`Run \`ferry ${topic} <command> --help\` for a command's options.`);
  }
  if (help.options.length > 0) parts.push(section('Options', columns(optionRows(help.options))));
  if (help.environment.length > 0) parts.push(environmentSection(help.environment));
  parts.push(examplesSection(help.examples));
  return parts.join('\n\n');
}

/** The commands, as `ferry --help` and an unknown command list them. */
export const COMMANDS_SECTION = section(
  'Commands',
  columns([
    ...(['serve', 'migrate', 'keys create', 'keys list', 'keys revoke', 'secret-key'] as const).map((topic): [string, string] => [TOPICS[topic].usage.replace(/ \[options\]$/, ''), TOPICS[topic].summary]),
    ['help <command>', 'Show the help of one command'],
  ]),
);

/** `ferry --help`: every command, then each command's options with their defaults, the environment, and examples. */
function overview(): string {
  const optionSections = (['serve', 'migrate', 'keys create', 'keys list', 'keys revoke'] as const).map((topic) => section(`Options of ${topic}`, columns(optionRows(TOPICS[topic].options))));
  return [
    'Usage: ferry <command> [options]',
    wrap('Ferry moves events between systems. `ferry` serves its /v2 API and console, applies the storage migrations and manages API keys.', WIDTH).join('\n'),
    COMMANDS_SECTION,
    section(
      'Options',
      columns([
        ['-h, --help', 'Show this help; after a command, that command\'s help'],
        ['-v, --version', 'Print the version of ferry'],
      ]),
    ),
    ...optionSections,
    environmentSection(TOPICS.serve.environment),
    examplesSection(['ferry serve --port 8080', `${POSTGRES} ferry serve`, 'ferry keys create --scopes pipelines:read']),
    'Run `ferry <command> --help` for one command\'s help.',
  ].join('\n\n');
}

/** The help page of `topic`, or of ferry as a whole without one. */
export function helpText(topic?: HelpTopic): string {
  return topic === undefined ? overview() : topicPage(topic);
}

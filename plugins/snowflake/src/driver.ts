import type Snowflake from 'snowflake-sdk';

/** The driver's log level, applied when it loads (and at once if it has). */
let logLevel: Snowflake.LogLevel = 'OFF';
let loaded: typeof Snowflake | undefined;
let loading: Promise<typeof Snowflake> | undefined;

/**
 * The snowflake driver, imported on first use. Importing it takes about 0.7 s and 55 MB here,
 * which a server that registers this plugin but never opens a Snowflake connection (most of
 * them) should not pay at every start.
 */
export function snowflakeDriver(): Promise<typeof Snowflake> {
  loading ??= import('snowflake-sdk').then((module) => {
    const sdk = ((module as { default?: typeof Snowflake }).default ?? module) as typeof Snowflake;
    sdk.configure({ logLevel });
    loaded = sdk;
    return sdk;
  });
  return loading;
}

/** Sets the driver's log level (process-wide, as the driver's own setting is). */
export function configureDriverLogLevel(level: Snowflake.LogLevel): void {
  logLevel = level;
  loaded?.configure({ logLevel });
}

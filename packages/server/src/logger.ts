import { pino, type DestinationStream, type Logger as PinoLogger } from 'pino';

/**
 * Paths pino blanks in every log line: credentials in headers, connector configs, keys and
 * secrets under any of their usual names. The engine never logs a secret on purpose; this is the
 * second line of defence against one reaching a log through an error or a request.
 */
export const REDACTED_PATHS = [
  'authorization',
  'headers.authorization',
  'req.headers.authorization',
  '*.authorization',
  'config',
  '*.config',
  'secret',
  '*.secret',
  'password',
  '*.password',
  'key',
  '*.key',
  'api_key',
  'token',
  '*.token',
  'signing_secret',
  '*.signing_secret',
  'connection_string',
  '*.connection_string',
  'bootstrapApiKey',
  'secretKey',
];

/** The server's JSON logger (pino), with secrets redacted. */
export function createLogger(level: string, destination?: DestinationStream): PinoLogger {
  return pino({ level, base: { service: 'ferry' }, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } }, destination);
}

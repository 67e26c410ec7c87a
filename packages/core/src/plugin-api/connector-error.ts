/** What a plugin says about a failure, so the core can decide retry and dead-lettering. */
export interface ConnectorErrorOptions {
  /**
   * True when trying again may succeed (connection refused, timeout, 5xx, throttling): the core
   * holds the flow and backs off. False when this record will never succeed as it is: the core
   * retries it a bounded number of times, then dead-letters it.
   */
  retryable: boolean;
  /** The underlying error, kept for logs only. */
  cause?: unknown;
}

/**
 * The error a connector plugin throws or reports. Its `code` is a short snake_case reason
 * (`connection_refused`, `auth_failed`, `record_rejected`, ...) and its message must not
 * contain secrets: the core redacts known secret values again before storing it.
 */
export class ConnectorError extends Error {
  /** Short snake_case reason code. */
  readonly code: string;
  /** Whether the core should try again (see {@link ConnectorErrorOptions.retryable}). */
  readonly retryable: boolean;

  constructor(code: string, message: string, options: ConnectorErrorOptions) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ConnectorError';
    this.code = code;
    this.retryable = options.retryable;
  }
}

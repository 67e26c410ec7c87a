import { context, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span, type TimeInput } from '@opentelemetry/api';

/**
 * The instrumentation scope of every span Ferry makes. Through `@opentelemetry/api` alone: until
 * the host registers an SDK (a tracer provider), each span is a no-op costing a small object.
 */
export const TRACER_NAME = '@ferry/core';

/**
 * Starts a span. The tracer is looked up each time, not kept: a host may register its SDK after
 * the engine was created, and a test may register a fresh one per case.
 *
 * @param parent - the context the span is a child of; default the active one. Given explicitly
 *   where the parent is known, so that spans nest even when the host registered no context manager.
 */
export function startSpan(name: string, attributes: Attributes, options: { parent?: Context; kind?: SpanKind; startTime?: TimeInput } = {}): Span {
  return trace.getTracer(TRACER_NAME).startSpan(name, { kind: options.kind ?? SpanKind.INTERNAL, attributes, ...(options.startTime === undefined ? {} : { startTime: options.startTime }) }, options.parent ?? context.active());
}

/**
 * Runs `fn` in a child span of `parent` (default: the active context), with that span active so
 * that a host's instrumentation of the drivers a plugin uses nests under it, and ends the span
 * when `fn` settles. A throw marks the span as failed with `describe(error)`, never with the raw
 * error: an error thrown by a plugin may quote a secret, so only what the engine has scrubbed
 * goes on a span.
 */
export async function inSpan<T>(name: string, attributes: Attributes, parent: Context | undefined, fn: (span: Span) => Promise<T>, describe: (error: unknown) => SpanFailure): Promise<T> {
  const from = parent ?? context.active();
  const span = startSpan(name, attributes, { parent: from });
  try {
    return await context.with(trace.setSpan(from, span), () => fn(span));
  } catch (error) {
    failSpan(span, describe(error));
    throw error;
  } finally {
    span.end();
  }
}

/** What a failed span records: a stable code (`error.type`) and a message free of secrets. */
export interface SpanFailure {
  code: string;
  message: string;
}

/** Marks a span as failed, the OpenTelemetry way: status ERROR and the `error.type` attribute. */
export function failSpan(span: Span, failure: SpanFailure): void {
  span.setAttribute('error.type', failure.code);
  span.setStatus({ code: SpanStatusCode.ERROR, message: failure.message });
}

/** A context with `span` as its active span: the parent of the spans made under it. */
export function spanContext(span: Span, parent: Context = context.active()): Context {
  return trace.setSpan(parent, span);
}

export { SpanKind, type Context as TraceContext, type Span };

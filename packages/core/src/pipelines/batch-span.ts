import { failSpan, spanContext, startSpan, type Span, type SpanFailure } from '../common/index.js';
import type { PipelineRow } from '../storage/index.js';
import type { BatchCounts } from './batch-commit.js';
import { FlowError, FlowStop } from './flow-error.js';

/**
 * The span of one batch, from its read (`readStarted`, `performance.now()` time; a pushed
 * batch starts when handed over) to its commit, with a child span for the read. Made only for
 * a batch with records: an idle pipeline polling its source leaves no trace.
 */
export function startBatchSpan(row: PipelineRow, runId: string | null, records: number, readStarted?: number): Span {
  const attributes = {
    'ferry.workspace.id': row.workspace_id,
    'ferry.pipeline.id': row.id,
    'ferry.run.id': runId ?? '',
    'ferry.batch.records': records,
  };
  const span = startSpan('ferry.pipeline.batch', attributes, readStarted === undefined ? {} : { startTime: readStarted });
  if (readStarted !== undefined) startSpan('ferry.pipeline.read', { 'ferry.batch.records': records }, { parent: spanContext(span), startTime: readStarted }).end();
  return span;
}

/** What a span of the flow records of a failure: the flow's own code and scrubbed message, never a plugin's raw error. */
export function flowFailure(error: unknown): SpanFailure {
  if (error instanceof FlowError) return { code: error.code, message: error.message };
  if (error instanceof FlowStop) return { code: 'stopped', message: 'The flow stopped before the batch was committed.' };
  return { code: 'unexpected_error', message: 'The batch failed.' };
}

/** Ends a batch's span with what became of its events, or with the failure that stopped it. */
export function endBatchSpan(span: Span, counts: BatchCounts | undefined, error?: unknown): void {
  if (counts) {
    span.setAttributes({ 'ferry.batch.delivered': counts.events_written, 'ferry.batch.filtered': counts.events_filtered, 'ferry.batch.dead_lettered': counts.events_dead_lettered });
  }
  if (error !== undefined) failSpan(span, flowFailure(error));
  span.end();
}

/** The API's records, as the console reads them (fields it does not use are left out). */

export type Health = 'healthy' | 'degraded' | 'down';

export interface Connector {
  id: string;
  /** The API's name, or its id when it has none (see `named` in data.ts). */
  name: string;
  type: string;
  direction: 'source' | 'destination' | 'bidirectional';
  config: Record<string, unknown>;
  health: Health;
  pipeline_count: number;
  rotation_status: string | null;
  last_error: { code: string; message: string; at: string } | null;
  created_at: string;
  updated_at: string;
}

export interface Run {
  id: string;
  pipeline_id: string;
  trigger: 'schedule' | 'manual' | 'stream';
  status: 'queued' | 'running' | 'succeeded' | 'failed';
  scheduled_for: string | null;
  started_at: string | null;
  finished_at: string | null;
  events_read: number;
  events_written: number;
  events_filtered: number;
  events_dead_lettered: number;
  error: string | null;
  created_at: string;
}

export interface Pipeline {
  id: string;
  name: string;
  source_connector_id: string;
  destination_connector_id: string;
  transforms: Array<{ type: string }>;
  schedule: string | null;
  state: 'draft' | 'active' | 'paused' | 'deleting';
  batch_size: number;
  flush_interval_ms: number;
  max_attempts: number;
  last_run: Run | null;
  created_at: string;
  updated_at: string;
}

export interface PipelineStats {
  pipeline_id: string;
  minutes: number;
  since: string;
  until: string;
  dead_lettered: number;
  replaying: number;
  per_minute: Array<{ minute: string; events_read: number; events_written: number; events_filtered: number; events_dead_lettered: number }>;
}

export interface FerryEvent {
  id: string;
  pipeline_id: string;
  type: string;
  occurred_at: string;
  payload: unknown;
  status: 'delivered' | 'filtered' | 'dead_lettered' | 'replaying';
  attempts: number;
  error: { stage?: string; code?: string; message?: string } | null;
  dead_lettered_at: string | null;
}

export interface Subscription {
  id: string;
  url: string;
  events: string[];
  enabled: boolean;
  description: string | null;
  disabled_reason: string | null;
  created_at: string;
  updated_at: string;
}

export interface Attempt {
  id: string;
  attempted_at: string;
  response_status: number | null;
  duration_ms: number | null;
  response_body: string | null;
  error: string | null;
}

export interface Delivery {
  id: string;
  subscription_id: string;
  event_id: string;
  event_type: string;
  status: 'pending' | 'retrying' | 'delivered' | 'failed';
  attempts: number;
  next_attempt_at: string | null;
  last_attempt_at: string | null;
  last_response_status: number | null;
  last_error: string | null;
  created_at: string;
  attempt_history?: Attempt[];
}

export interface CheckResult {
  health: Health;
  latency_ms: number;
  error?: { code: string; message: string };
  details?: Record<string, unknown>;
}

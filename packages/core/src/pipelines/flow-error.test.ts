import { describe, expect, it } from 'vitest';
import { ConnectorError } from '../plugin-api/index.js';
import { FlowError, isConfigurationCode, toFlowError } from './flow-error.js';

const scrub = (text: string) => text;
const reasonOf = (stage: 'source' | 'destination', code: string, retryable: boolean) => toFlowError(stage, new ConnectorError(code, 'm', { retryable }), scrub);

describe('FlowError reason', () => {
  it('is configuration_invalid for a non-retryable configuration code, on either side', () => {
    for (const code of ['configuration_invalid', 'permission_denied', 'table_not_found', 'column_not_found', 'bucket_not_found', 'url_not_allowed', 'tls_failed', 'query_failed']) {
      expect({ code, reason: reasonOf('destination', code, false).reason }).toEqual({ code, reason: 'configuration_invalid' });
      expect(reasonOf('source', code, false).needsFix).toBe(true);
    }
    expect(new FlowError('source', 'direction_unsupported', 'm', false).reason).toBe('configuration_invalid');
  });

  it('stays an outage when the plugin retries it, or when the code is not about configuration', () => {
    expect(reasonOf('destination', 'table_not_found', true).reason).toBe('destination_unavailable');
    expect(reasonOf('source', 'invalid_record', false).reason).toBe('source_unavailable');
    expect(reasonOf('destination', 'invalid_write_result', false)).toMatchObject({ reason: 'destination_unavailable', needsFix: false });
    expect(reasonOf('destination', 'connection_refused', true)).toMatchObject({ reason: 'destination_unavailable', needsFix: false });
  });

  it('keeps auth_failed and timeout, and internal for the engine', () => {
    expect(reasonOf('source', 'auth_failed', false)).toMatchObject({ reason: 'auth_failed', needsFix: true });
    expect(reasonOf('destination', 'timeout', true).reason).toBe('timeout');
    expect(new FlowError('internal', 'connector_type_unavailable', 'm', false).reason).toBe('internal');
    expect(new FlowError('storage', 'storage_unavailable', 'm', true).reason).toBe('internal');
  });

  it('knows configuration codes by name', () => {
    expect(isConfigurationCode('topic_not_found')).toBe(true);
    expect(isConfigurationCode('not_found_here')).toBe(false);
    expect(isConfigurationCode('record_rejected')).toBe(false);
  });
});

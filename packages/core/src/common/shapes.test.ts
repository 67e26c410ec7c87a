import { describe, expect, it } from 'vitest';
import { EVENT_STATUSES, EventStatusSchema, literalUnion, PIPELINE_STATES } from './enumerations.js';
import { ERROR_CODES, ERROR_STATUS } from './errors.js';
import { idPattern } from './ids.js';
import { inputSchemas, readOnlyFields } from './schemas.js';
import { resourceSchemas } from './shapes.js';
import { schemaErrors } from './validation.js';

const json = (schema: unknown) => JSON.parse(JSON.stringify(schema)) as unknown;

describe('enumerations', () => {
  it('become unions of literals in the order of their list, which validation reports as enum', () => {
    expect(json(EventStatusSchema)).toEqual({ anyOf: EVENT_STATUSES.map((s) => ({ const: s, type: 'string' })) });
    expect(schemaErrors(inputSchemas.createConnector, { type: 't', direction: 'both', config: {} })).toEqual([
      { pointer: '/direction', code: 'enum', detail: 'Expected one of "source", "destination", "bidirectional"' },
    ]);
    expect(json(literalUnion(PIPELINE_STATES, { description: 'd' }))).toMatchObject({ description: 'd' });
  });

  it('list every error code once, in the order of ERROR_STATUS', () => {
    expect(ERROR_CODES).toEqual(Object.keys(ERROR_STATUS));
  });
});

describe('resource schemas', () => {
  it('describe the records with the documented id patterns', () => {
    expect(json(resourceSchemas.Pipeline)).toMatchObject({
      properties: { id: { pattern: idPattern('pipeline') }, state: { anyOf: PIPELINE_STATES.map((s) => ({ const: s })) } },
    });
    expect(idPattern('connector')).toBe('^con_[0-9A-HJKMNP-TV-Z]{26}$');
  });

  it('make read-only every field a record shows and its create input lacks', () => {
    expect([...readOnlyFields.connector].sort()).toEqual(['created_at', 'health', 'id', 'last_error', 'pipeline_count', 'rotation_status', 'updated_at']);
    expect([...readOnlyFields.pipeline].sort()).toEqual(['created_at', 'held', 'id', 'last_run', 'state', 'updated_at']);
    expect([...readOnlyFields.webhook].sort()).toEqual(['created_at', 'disabled_reason', 'id', 'updated_at']);
  });

  it('wrap a listing page around its items', () => {
    const page = json(resourceSchemas.Page(resourceSchemas.Run)) as { required: string[]; properties: { data: { items: unknown } } };
    expect(page.required).toEqual(['data', 'next_cursor', 'has_more']);
    expect(page.properties.data.items).toEqual(json(resourceSchemas.Run));
  });
});

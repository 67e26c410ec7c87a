import type { CreatePipelineInput, UpdatePipelineInput } from '@ferry/core';
import { ENUMERATIONS, inputSchemas } from '@ferry/core/internal';
import { PAGE_QUERY } from '../query.js';
import type { RouteDefinition } from '../route.js';
import { accepted, created, noContent, ok } from './respond.js';

const scope = { read: { kind: 'api_key', scope: 'pipelines:read' }, write: { kind: 'api_key', scope: 'pipelines:write' } } as const;

// The bounds and default of `minutes` are the service's, read from its input schema.
const minutes = inputSchemas.pipelineStats.properties.minutes;

/** The pipeline routes (docs/api.md, Pipelines and Runs). */
export const pipelineRoutes: RouteDefinition[] = [
  {
    method: 'POST',
    path: '/v2/pipelines',
    operationId: 'createPipeline',
    summary: 'Create a pipeline (draft, or active with "activate": true)',
    tag: 'Pipelines',
    auth: scope.write,
    body: 'required',
    bodySchema: inputSchemas.createPipeline,
    responses: { 201: { description: 'The pipeline.', schema: 'Pipeline' } },
    errors: [409, 422],
    handle: async ({ engine, workspaceId, body }) => created(await engine.pipelines.create(workspaceId, body as CreatePipelineInput), '/v2/pipelines'),
  },
  {
    method: 'GET',
    path: '/v2/pipelines',
    operationId: 'listPipelines',
    summary: 'List pipelines',
    tag: 'Pipelines',
    auth: scope.read,
    body: 'none',
    query: {
      ...PAGE_QUERY,
      state: { kind: 'enum', values: ENUMERATIONS.PIPELINE_STATES, description: 'Only pipelines in this state.' },
      name: { kind: 'string', maxLength: 200, description: 'Only the pipeline with this exact name.' },
    },
    responses: { 200: { description: 'A page of pipelines.', schema: 'Page:Pipeline' } },
    errors: [],
    handle: async ({ engine, workspaceId, query }) => ok(await engine.pipelines.list(workspaceId, query)),
  },
  {
    method: 'GET',
    path: '/v2/pipelines/{id}',
    operationId: 'getPipeline',
    summary: 'Get a pipeline, with its last run',
    tag: 'Pipelines',
    auth: scope.read,
    body: 'none',
    responses: { 200: { description: 'The pipeline.', schema: 'Pipeline' } },
    errors: [404],
    handle: async ({ engine, workspaceId, params }) => ok(await engine.pipelines.get(workspaceId, params.id!)),
  },
  {
    method: 'PATCH',
    path: '/v2/pipelines/{id}',
    operationId: 'updatePipeline',
    summary: 'Update a pipeline; an active one picks the change up at its next batch',
    tag: 'Pipelines',
    auth: scope.write,
    body: 'required',
    bodySchema: inputSchemas.updatePipeline,
    responses: { 200: { description: 'The updated pipeline.', schema: 'Pipeline' } },
    errors: [404, 409, 422],
    handle: async ({ engine, workspaceId, params, body }) => ok(await engine.pipelines.update(workspaceId, params.id!, body as UpdatePipelineInput)),
  },
  {
    method: 'DELETE',
    path: '/v2/pipelines/{id}',
    operationId: 'deletePipeline',
    summary: 'Delete a pipeline; connectors and data already written are kept',
    tag: 'Pipelines',
    auth: scope.write,
    body: 'none',
    responses: {
      202: { description: 'Runs are in flight: the pipeline is `deleting` and goes when they finish.', schema: 'Pipeline' },
      204: { description: 'Deleted.' },
    },
    errors: [404],
    handle: async ({ engine, workspaceId, params }) => {
      const result = await engine.pipelines.delete(workspaceId, params.id!);
      return result.status === 'deleting' ? accepted(result.pipeline) : noContent();
    },
  },
  {
    method: 'POST',
    path: '/v2/pipelines/{id}/activate',
    operationId: 'activatePipeline',
    summary: 'Activate a draft or paused pipeline',
    tag: 'Pipelines',
    auth: scope.write,
    body: 'none',
    responses: { 200: { description: 'The pipeline, now active.', schema: 'Pipeline' } },
    errors: [404, 409],
    handle: async ({ engine, workspaceId, params }) => ok(await engine.pipelines.activate(workspaceId, params.id!)),
  },
  {
    method: 'POST',
    path: '/v2/pipelines/{id}/pause',
    operationId: 'pausePipeline',
    summary: 'Pause an active pipeline after its in-flight batches finish',
    tag: 'Pipelines',
    auth: scope.write,
    body: 'none',
    responses: { 200: { description: 'The pipeline, now paused.', schema: 'Pipeline' } },
    errors: [404, 409],
    handle: async ({ engine, workspaceId, params }) => ok(await engine.pipelines.pause(workspaceId, params.id!)),
  },
  {
    method: 'POST',
    path: '/v2/pipelines/{id}/runs',
    operationId: 'triggerRun',
    summary: 'Run an active scheduled pipeline now',
    tag: 'Pipelines',
    auth: scope.write,
    body: 'none',
    responses: { 202: { description: 'The queued run.', schema: 'Run' } },
    errors: [404, 409],
    handle: async ({ engine, workspaceId, params }) => accepted(await engine.pipelines.triggerRun(workspaceId, params.id!)),
  },
  {
    method: 'GET',
    path: '/v2/pipelines/{id}/stats',
    operationId: 'getPipelineStats',
    summary: "A pipeline's events per minute over a window ending now, and its dead-lettered count",
    tag: 'Pipelines',
    auth: scope.read,
    body: 'none',
    query: {
      minutes: {
        kind: 'integer',
        minimum: minutes.minimum!,
        maximum: minutes.maximum!,
        default: minutes.default as number,
        description: 'How many minutes `per_minute` holds, the current one last.',
      },
    },
    responses: { 200: { description: 'The figures; `per_minute` has one entry per minute, zeros where nothing committed.', schema: 'PipelineStats' } },
    errors: [404],
    handle: async ({ engine, workspaceId, params, query }) => ok(await engine.pipelines.stats(workspaceId, params.id!, query)),
  },
  {
    method: 'GET',
    path: '/v2/pipelines/{id}/runs',
    operationId: 'listRuns',
    summary: 'List the runs of a pipeline',
    tag: 'Pipelines',
    auth: scope.read,
    body: 'none',
    query: PAGE_QUERY,
    responses: { 200: { description: 'A page of runs, oldest first.', schema: 'Page:Run' } },
    errors: [404],
    handle: async ({ engine, workspaceId, params, query }) => ok(await engine.pipelines.listRuns(workspaceId, params.id!, query)),
  },
];

import type { CreateConnectorInput, UpdateConnectorInput } from '@ferry/core';
import { inputSchemas } from '@ferry/core/internal';
import type { Static } from '@sinclair/typebox';
import { PAGE_QUERY } from '../query.js';
import type { RouteDefinition } from '../route.js';
import { created, noContent, ok } from './respond.js';

const scope = { read: { kind: 'api_key', scope: 'connectors:read' }, write: { kind: 'api_key', scope: 'connectors:write' } } as const;

/** The connector routes (docs/api.md, Routes, Connectors and Connector rotation). */
export const connectorRoutes: RouteDefinition[] = [
  {
    method: 'POST',
    path: '/v2/connectors',
    operationId: 'createConnector',
    summary: 'Create a connector',
    tag: 'Connectors',
    auth: scope.write,
    body: 'required',
    bodySchema: inputSchemas.createConnector,
    responses: { 201: { description: 'The connector; secret config fields read "********".', schema: 'Connector' } },
    errors: [422],
    handle: async ({ engine, workspaceId, body }) => created(await engine.connectors.create(workspaceId, body as CreateConnectorInput), '/v2/connectors'),
  },
  {
    method: 'GET',
    path: '/v2/connectors',
    operationId: 'listConnectors',
    summary: 'List connectors',
    tag: 'Connectors',
    auth: scope.read,
    body: 'none',
    query: { ...PAGE_QUERY, type: { kind: 'string', maxLength: 100, description: 'Only connectors of this type.' } },
    responses: { 200: { description: 'A page of connectors.', schema: 'Page:Connector' } },
    errors: [],
    handle: async ({ engine, workspaceId, query }) => ok(await engine.connectors.list(workspaceId, query)),
  },
  {
    method: 'GET',
    path: '/v2/connectors/{id}',
    operationId: 'getConnector',
    summary: 'Get a connector, with its health and pipeline count',
    tag: 'Connectors',
    auth: scope.read,
    body: 'none',
    responses: { 200: { description: 'The connector.', schema: 'Connector' } },
    errors: [404],
    handle: async ({ engine, workspaceId, params }) => ok(await engine.connectors.get(workspaceId, params.id!)),
  },
  {
    method: 'PATCH',
    path: '/v2/connectors/{id}',
    operationId: 'updateConnector',
    summary: 'Update a connector (config is merged over the old one, then validated)',
    tag: 'Connectors',
    auth: scope.write,
    body: 'required',
    bodySchema: inputSchemas.updateConnector,
    responses: { 200: { description: 'The updated connector.', schema: 'Connector' } },
    errors: [404, 409],
    handle: async ({ engine, workspaceId, params, body }) => ok(await engine.connectors.update(workspaceId, params.id!, body as UpdateConnectorInput)),
  },
  {
    method: 'DELETE',
    path: '/v2/connectors/{id}',
    operationId: 'deleteConnector',
    summary: 'Delete a connector no pipeline references',
    tag: 'Connectors',
    auth: scope.write,
    body: 'none',
    responses: { 204: { description: 'Deleted.' } },
    errors: [404, 409],
    handle: async ({ engine, workspaceId, params }) => {
      await engine.connectors.delete(workspaceId, params.id!);
      return noContent();
    },
  },
  {
    method: 'POST',
    path: '/v2/connectors/{id}/check',
    operationId: 'checkConnector',
    summary: 'Check the connection live, through the plugin',
    tag: 'Connectors',
    auth: scope.write,
    body: 'none',
    responses: { 200: { description: 'The outcome of the check.', schema: 'ConnectorCheck' } },
    errors: [404],
    handle: async ({ engine, workspaceId, params }) => ok(await engine.connectors.check(workspaceId, params.id!)),
  },
  {
    method: 'GET',
    path: '/v2/connectors/{id}/signing-secret',
    operationId: 'getConnectorSigningSecret',
    summary: "Get a webhook connector's signing secret, which senders sign with",
    tag: 'Connectors',
    // Reading a credential is a write-level act, as for a subscription's secret.
    auth: scope.write,
    body: 'none',
    responses: { 200: { description: 'The secret (404 for connector types without one).', schema: 'ConnectorSigningSecret' } },
    errors: [404],
    handle: async ({ engine, workspaceId, params }) => ok(await engine.connectors.signingSecret(workspaceId, params.id!)),
  },
  {
    method: 'POST',
    path: '/v2/connectors/{id}/rotate',
    operationId: 'rotateConnector',
    summary: 'Rotate the credentials: pause the pipelines using it, swap, check, resume',
    tag: 'Connectors',
    auth: { kind: 'api_key', scope: 'connectors:rotate' },
    body: 'optional',
    bodySchema: inputSchemas.rotateConnector,
    responses: { 200: { description: 'The rotated connector and what the rotation did.', schema: 'ConnectorRotation' } },
    errors: [404, 409],
    handle: async ({ engine, workspaceId, params, body }) => ok(await engine.connectors.rotate(workspaceId, params.id!, (body ?? {}) as Static<typeof inputSchemas.rotateConnector>)),
  },
];

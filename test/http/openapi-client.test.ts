/**
 * A client generated from the served OpenAPI document types the API's inputs precisely, and the
 * types agree with the server: bodies that compile are accepted, bodies the compiler refuses (a
 * config field the connector type does not have, a step type that does not exist) are refused
 * by the server too. The document is fetched from both adapters, turned into TypeScript with
 * openapi-typescript, and a short program using the types is compiled with the TypeScript
 * compiler API. Mounted under a prefix, the document's server URL leads a client to the API.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import express from 'express';
import Fastify from 'fastify';
import openapiTS, { astToString, type OpenAPI3 } from 'openapi-typescript';
import ts from 'typescript';
import { request as undiciRequest } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ferryRouter } from '@ferry/express';
import { ferryPlugin } from '@ferry/fastify';
import { kafka } from '@ferry/kafka';
import { postgres } from '@ferry/postgres';
import { s3 } from '@ferry/s3';
import { webhook } from '@ferry/webhook';
import { listenLoopback } from '@ferry/testing';
import { ADAPTERS, startApi, type AdapterName, type TestApi } from './harness.js';

type Document = { servers: Array<{ url: string }>; [key: string]: unknown };

/** Type aliases the program declares its values with. */
const PRELUDE = `
import type { components, paths } from './schema.js';
import type { components as RealComponents } from './schema-real.js';

type Json<T> = T extends { content: { 'application/json': infer B } } ? B : never;
export type CreateConnector = Json<paths['/v2/connectors']['post']['requestBody']>;
export type UpdateConnector = Json<paths['/v2/connectors/{id}']['patch']['requestBody']>;
export type CreatePipeline = Json<paths['/v2/pipelines']['post']['requestBody']>;
export type UpdatePipeline = Json<paths['/v2/pipelines/{id}']['patch']['requestBody']>;
export type Connector = paths['/v2/connectors/{id}']['get']['responses'][200]['content']['application/json'];
export type Problem = components['schemas']['Problem'];
export type CreatedHeaders = paths['/v2/connectors']['post']['responses'][201]['headers'];
export type ListQuery = NonNullable<paths['/v2/connectors']['get']['parameters']['query']>;

// A secret reads "********" in answers: the type says so.
export function storedPassword(connector: Connector): '********' | undefined {
  return connector.type === 'postgres' ? connector.config.password : undefined;
}
export const notFound: Problem['code'] = 'not_found';
// @ts-expect-error -- not an error code of the API
export const unknownCode: Problem['code'] = 'no_such_code';
export const replayed: CreatedHeaders['Idempotent-Replayed'] = 'true';
export const requestId: CreatedHeaders['X-Request-Id'] = 'req-1';
// A limit above the largest page is lowered by the server, not refused: it types.
export const bigPage: ListQuery = { limit: 500, type: 'postgres' };

// The real plugins' configs: nested secrets, unions and records type as well.
export const kafkaConfig: RealComponents['schemas']['KafkaConfig'] = {
  brokers: ['kafka-1.example.com:9092'],
  ssl: { ca: 'PEM', key: 'PEM KEY' },
  sasl: { mechanism: 'scram-sha-256', username: 'ferry', password: 'pw' },
  topics: ['orders'],
};
// @ts-expect-error -- sasl.mechanism is one of plain, scram-sha-256, scram-sha-512
export const kafkaWrongMechanism: RealComponents['schemas']['KafkaConfig'] = { brokers: ['k:9092'], sasl: { mechanism: 'kerberos', username: 'u', password: 'p' } };
export const postgresDestination: RealComponents['schemas']['PostgresConnectorCreate'] = {
  type: 'postgres',
  direction: 'destination',
  config: { host: 'db.example.com', database: 'shop', user: 'ferry', password: 'pw', table: 'events', mode: 'insert', columns: { total: 'order.total' } },
};
export const webhookHeaders: RealComponents['schemas']['WebhookConfigRedacted']['headers'] = '********';
`;

/** One body of the program: compiles (and is accepted) when `refused` is absent. */
interface Case {
  name: string;
  type: 'CreateConnector' | 'UpdateConnector' | 'CreatePipeline' | 'UpdatePipeline';
  body: Record<string, unknown>;
  /** Why the compiler refuses it, and the status the server answers it with. */
  refused?: { why: string; status: number };
}

const PG = { host: 'db.example.com', password: 'pw-client-1' };
const CONNECTOR_CASES: Case[] = [
  { name: 'postgresSource', type: 'CreateConnector', body: { type: 'postgres', direction: 'source', name: 'orders-db', config: { ...PG, database: 'shop' } } },
  { name: 'webhookDestination', type: 'CreateConnector', body: { type: 'webhook', direction: 'destination', config: { url: 'https://hooks.example.com/in' } } },
  { name: 'wrongConfigField', type: 'CreateConnector', body: { type: 'postgres', direction: 'source', config: { hostname: 'db.example.com', password: 'pw' } }, refused: { why: 'postgres has no `hostname`', status: 400 } },
  { name: 'wrongConfigType', type: 'CreateConnector', body: { type: 'webhook', direction: 'source', config: { url: 42 } }, refused: { why: 'a webhook url is a string', status: 400 } },
  { name: 'unknownConnectorType', type: 'CreateConnector', body: { type: 'mysql', direction: 'source', config: {} }, refused: { why: 'no such connector type', status: 400 } },
  { name: 'wrongDirection', type: 'CreateConnector', body: { type: 'postgres', direction: 'bidirectional', config: PG }, refused: { why: 'postgres is source or destination', status: 422 } },
  { name: 'missingConfig', type: 'CreateConnector', body: { type: 'postgres', direction: 'source' }, refused: { why: 'config is required', status: 400 } },
];
const UPDATE_CASES: Case[] = [
  // `null` removes a field; "********" keeps the stored secret.
  { name: 'patchConfig', type: 'UpdateConnector', body: { config: { database: null, password: '********' } } },
  { name: 'patchWrongField', type: 'UpdateConnector', body: { config: { hostname: 'db2.example.com' } }, refused: { why: 'no connector type has `hostname`', status: 400 } },
  { name: 'patchType', type: 'UpdateConnector', body: { type: 'webhook' }, refused: { why: 'the type cannot change', status: 400 } },
];
const STEPS = [
  { type: 'filter', path: 'status', op: 'eq', value: 'paid' },
  { type: 'mask', path: 'customer.email', method: 'redact' },
  { type: 'rename', from: 'total', to: 'amount' },
  { type: 'cast', path: 'amount', to: 'number' },
  { type: 'drop', paths: ['internal'] },
];
const pipelineCases = (source: string, destination: string): Case[] => [
  { name: 'pipeline', type: 'CreatePipeline', body: { name: 'orders', source_connector_id: source, destination_connector_id: destination, transforms: STEPS } },
  {
    name: 'unknownStep',
    type: 'CreatePipeline',
    body: { name: 'orders-2', source_connector_id: source, destination_connector_id: destination, transforms: [{ type: 'uppercase', path: 'status' }] },
    refused: { why: 'no such step type', status: 400 },
  },
  {
    name: 'wrongStepField',
    type: 'CreatePipeline',
    body: { name: 'orders-3', source_connector_id: source, destination_connector_id: destination, transforms: [{ type: 'mask', path: 'email', method: 'shred' }] },
    refused: { why: 'mask methods are hash and redact', status: 400 },
  },
  { name: 'updateSteps', type: 'UpdatePipeline', body: { transforms: [{ type: 'set', path: 'source', value: { system: 'shop' } }] } },
  { name: 'stepWithoutField', type: 'UpdatePipeline', body: { transforms: [{ type: 'filter', op: 'eq', value: 1 }] }, refused: { why: 'a filter step needs a path', status: 400 } },
];

/** The program's line for a case: one line, so `@ts-expect-error` covers every error it has. */
const line = (c: Case): string => `${c.refused ? `// @ts-expect-error -- ${c.refused.why}\n` : ''}export const ${c.name}: ${c.type} = ${JSON.stringify(c.body)};`;

async function typesOf(doc: unknown): Promise<string> {
  return astToString(await openapiTS(doc as OpenAPI3, { silent: true }));
}

/** Compiles the program in `dir` strictly; the diagnostics, formatted. */
function compile(dir: string): string[] {
  const program = ts.createProgram({
    rootNames: [join(dir, 'program.ts')],
    options: {
      strict: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      lib: ['lib.es2022.d.ts'],
      types: [],
      skipLibCheck: true,
      noUncheckedIndexedAccess: true,
    },
  });
  const host: ts.FormatDiagnosticsHost = { getCanonicalFileName: (f) => f, getCurrentDirectory: () => dir, getNewLine: () => '\n' };
  return ts.getPreEmitDiagnostics(program).map((d) => ts.formatDiagnostic(d, host).trim());
}

async function getJson(url: string): Promise<{ status: number; headers: Record<string, unknown>; body: any }> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const res = await undiciRequest(url);
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

describe('a client generated from the OpenAPI document', () => {
  const apis = {} as Record<AdapterName, TestApi>;
  let real: TestApi;
  let dir: string;

  beforeAll(async () => {
    for (const adapter of ADAPTERS) apis[adapter] = await startApi({ adapter, storage: 'sqlite', httpOptions: { rateLimit: false } });
    // The real connector plugins, for the shapes the suite's stand-ins do not have.
    real = await startApi({ adapter: 'fastify', storage: 'sqlite', plugins: [postgres(), webhook(), kafka(), s3()], httpOptions: { rateLimit: false } });
    dir = mkdtempSync(join(tmpdir(), 'ferry-openapi-client-'));
  });
  afterAll(async () => {
    await Promise.all([...Object.values(apis), real].map((api) => api?.close()));
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('is the same document under Express and Fastify', async () => {
    const [a, b] = await Promise.all(ADAPTERS.map((adapter) => apis[adapter].request('GET', '/v2/openapi.json', { key: null })));
    expect(a!.status).toBe(200);
    expect(b!.body).toEqual(a!.body);
  });

  it('compiles what the server accepts, and refuses to compile what the server refuses', async () => {
    const api = apis.express;
    const doc = (await api.request('GET', '/v2/openapi.json', { key: null })).body as Document;
    const realDoc = (await real.request('GET', '/v2/openapi.json', { key: null })).body as Document;
    const [source, destination] = [await api.request('POST', '/v2/connectors', { body: CONNECTOR_CASES[0]!.body }), await api.request('POST', '/v2/connectors', { body: CONNECTOR_CASES[1]!.body })];
    expect([source.status, destination.status], source.text + destination.text).toEqual([201, 201]);
    const cases = [...CONNECTOR_CASES, ...UPDATE_CASES, ...pipelineCases(source.body.id, destination.body.id)];

    // The server agrees with the compiler on every body (asked first: the compilation takes
    // longer than a server keeps an idle connection open).
    let pipelineId = '';
    for (const c of cases.slice(2)) {
      const path = c.type === 'CreateConnector' ? '/v2/connectors' : c.type === 'UpdateConnector' ? `/v2/connectors/${source.body.id}` : c.type === 'CreatePipeline' ? '/v2/pipelines' : `/v2/pipelines/${pipelineId}`;
      const res = await api.request(c.type.startsWith('Update') ? 'PATCH' : 'POST', path, { body: c.body });
      const expected = c.refused?.status ?? (c.type.startsWith('Create') ? 201 : 200);
      expect(res.status, `${c.name}: ${res.text}`).toBe(expected);
      if (c.name === 'pipeline') pipelineId = res.body.id;
      if (c.name === 'patchConfig') expect(res.body.config).toEqual({ host: PG.host, password: '********' });
    }

    const [types, realTypes] = await Promise.all([typesOf(doc), typesOf(realDoc)]);
    writeFileSync(join(dir, 'schema.ts'), types);
    writeFileSync(join(dir, 'schema-real.ts'), realTypes);
    writeFileSync(join(dir, 'program.ts'), `${PRELUDE}\n${cases.map(line).join('\n')}\n`);
    expect(compile(dir)).toEqual([]);
  });

  describe.each(ADAPTERS)('mounted under a prefix [%s]', (adapter) => {
    let origin: string;
    let stop: () => Promise<void>;

    beforeAll(async () => {
      const engine = apis[adapter].engine;
      // Under /api as the host mounts it; under /pub with the public URL the host states.
      const publicUrl = 'https://api.example.com/ferry';
      if (adapter === 'express') {
        const app = express();
        app.use('/api', ferryRouter(engine, { rateLimit: false }));
        app.use('/pub', ferryRouter(engine, { rateLimit: false, publicUrl }));
        const server = await listenLoopback(app);
        origin = server.url;
        stop = () => server.close();
      } else {
        const app = Fastify({ logger: false });
        await app.register(ferryPlugin, { engine, prefix: '/api', rateLimit: false });
        await app.register(ferryPlugin, { engine, prefix: '/pub', rateLimit: false, publicUrl });
        await app.listen({ port: 0, host: '127.0.0.1' });
        origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
        stop = () => app.close();
      }
    });
    afterAll(() => stop?.());

    it('names the mount point as its server, where the paths of the document are served', async () => {
      const docUrl = `${origin}/api/v2/openapi.json`;
      const doc = await getJson(docUrl);
      expect(doc.status).toBe(200);
      expect(doc.body.servers).toEqual([{ url: '/api' }]);
      // As a client does: the server URL resolved against where the document came from, then the path.
      const base = new URL(doc.body.servers[0].url, docUrl).href.replace(/\/$/, '');
      const key = apis[adapter].defaultKey;
      const created = await undiciRequest(`${base}/v2/connectors`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(CONNECTOR_CASES[0]!.body),
      });
      const body = (await created.body.json()) as { id: string };
      expect(created.statusCode).toBe(201);
      // The Location of the new connector leads there too.
      const location = new URL(String(created.headers.location), `${base}/v2/connectors`).href;
      expect(location).toBe(`${base}/v2/connectors/${body.id}`);
      const read = await undiciRequest(location, { headers: { authorization: `Bearer ${key}` } });
      expect(read.statusCode).toBe(200);
      await read.body.dump();
    });

    it('names the public URL instead when the host gives one', async () => {
      expect((await getJson(`${origin}/pub/v2/openapi.json`)).body.servers).toEqual([{ url: 'https://api.example.com/ferry' }]);
    });
  });
});

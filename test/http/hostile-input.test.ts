/**
 * Inputs that used to reach past the API's own answers, on every adapter and storage: U+0000 and
 * lone surrogates anywhere (400 `invalid_character`, never a Postgres-only 500 nor a lossy name),
 * malformed percent-encodings (404), a header block over Node's limit (431), a chunked body over
 * the limit (413, and the connection closed), and `__proto__` keys in a PATCH (400, like create).
 * Every answer is problem+json with `X-Request-Id`, including those Node or the framework would
 * otherwise have written themselves.
 */
import { connect } from 'node:net';
import { expect, it } from 'vitest';
import { describeMatrix, PROBLEM_JSON, type TestResponse } from './harness.js';
import { createConnector, createPipeline, expectFieldError, expectProblem, unique } from './fixtures.js';

/** One raw HTTP/1.1 exchange: what came back, and whether the server closed the connection. */
interface RawExchange {
  status: number;
  headers: Record<string, string>;
  body: string;
  closedByServer: boolean;
}

/** How long a server may take to close a connection it answered, before the test calls it kept: a bound on failure, never waited on success. */
const CLOSE_BOUND_MS = 10_000;

/**
 * Sends `head` (request line and headers, without the blank line), then up to `chunks` chunks of
 * a chunked body, each once the previous one was flushed, while reading the answer. Resolves when
 * the server closes the connection (`closedByServer: true`), or, when it answered and keeps the
 * connection open, after {@link CLOSE_BOUND_MS} (`closedByServer: false`).
 */
function rawExchange(url: string, head: string, chunks: number, chunk = 'a'.repeat(64 * 1024)): Promise<RawExchange> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let received = '';
    let sent = 0;
    let finished = false;
    const finish = (closedByServer: boolean) => {
      if (finished) return;
      finished = true;
      clearTimeout(bound);
      socket.destroy();
      const [top = '', ...rest] = received.split('\r\n\r\n');
      const [statusLine = '', ...lines] = top.split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const at = line.indexOf(':');
        headers[line.slice(0, at).trim().toLowerCase()] = line.slice(at + 1).trim();
      }
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: rest.join('\r\n\r\n'), closedByServer });
    };
    const bound = setTimeout(() => finish(false), CLOSE_BOUND_MS);
    socket.on('data', (data) => {
      received += data.toString('latin1');
    });
    socket.on('end', () => finish(true));
    socket.on('close', () => finish(true));
    socket.on('error', (error: NodeJS.ErrnoException) => (error.code === 'ECONNRESET' || error.code === 'EPIPE' ? finish(true) : reject(error)));
    const pump = () => {
      if (finished || sent >= chunks) return;
      sent++;
      socket.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`, (error) => (error ? finish(true) : setImmediate(pump)));
    };
    socket.write(`${head}\r\n\r\n`, () => setImmediate(pump));
  });
}

function asResponse(raw: RawExchange): TestResponse {
  let body: unknown;
  try {
    body = JSON.parse(raw.body);
  } catch {
    body = undefined;
  }
  return { status: raw.status, headers: raw.headers, body, text: raw.body } as TestResponse;
}

describeMatrix('hostile input', (ctx) => {
  it('?type=%00 on the connectors, pipelines and events listings is 400 invalid_character', async () => {
    const pipeline = await createPipeline(ctx.api);
    for (const path of ['/v2/connectors?type=%00', '/v2/pipelines?name=a%00b', `/v2/pipelines/${pipeline.id}/events?type=%00`, `/v2/pipelines/${pipeline.id}/events?limit=5&type=x%00`]) {
      const res = await ctx.api.request('GET', path);
      expectProblem(res, 400, 'invalid_character');
      expect(res.body.errors).toEqual([expect.objectContaining({ code: 'invalid_character' })]);
    }
    // With another problem besides, the query is simply invalid and both are listed.
    const mixed = await ctx.api.request('GET', '/v2/connectors?type=%00&limit=0');
    expectProblem(mixed, 400, 'validation_failed');
    expectFieldError(mixed, '/type', 'invalid_character');
  });

  it('U+0000 or a lone surrogate in a path segment is 400 invalid_character; a malformed percent-encoding names nothing (404)', async () => {
    expectProblem(await ctx.api.request('GET', '/v2/pipelines/pip_%00'), 400, 'invalid_character');
    expectProblem(await ctx.api.request('GET', '/v2/connectors/%ED%A0%80'), 400, 'invalid_character');
    expectProblem(await ctx.api.request('DELETE', '/v2/connectors/%00', { key: null }), 400, 'invalid_character');
    for (const path of ['/v2/connectors/%E0%A4%A', '/v2/connectors/%', '/v2/pipelines/%zz/runs']) {
      const res = await ctx.api.request('GET', path);
      expectProblem(res, 404, 'not_found');
      expect(res.headers['x-request-id']).toEqual(expect.any(String));
    }
  });

  it('lone surrogates are refused wherever a string is stored, so three names never collide', async () => {
    const { source_connector_id: src, destination_connector_id: dst } = await createPipeline(ctx.api);
    const base = `lone-${unique()}`;
    // Raw JSON: JSON.stringify would escape them as they are, but the point is what the server parses.
    const body = (name: string) => `{"name":"${name}","source_connector_id":"${src}","destination_connector_id":"${dst}"}`;
    for (const name of [`${base}\\ud800`, `${base}\\udbff`, `${base}\\udc00x`]) {
      const res = await ctx.api.request('POST', '/v2/pipelines', { raw: body(name), headers: { 'content-type': 'application/json' } });
      expectProblem(res, 400, 'invalid_character');
      expectFieldError(res, '/name', 'invalid_character');
    }
    // A well-formed pair and the replacement character are ordinary text, and stay distinct.
    for (const name of [`${base}\\ud83d\\ude00`, `${base}\\ufffd`]) {
      expect((await ctx.api.request('POST', '/v2/pipelines', { raw: body(name), headers: { 'content-type': 'application/json' } })).status).toBe(201);
    }
    const listed = await ctx.api.request('GET', `/v2/pipelines?name=${encodeURIComponent(`${base}\u{1F600}`)}`);
    expect(listed.body.data.map((p: { name: string }) => p.name)).toEqual([`${base}\u{1F600}`]);
    // In a key of a nested object too.
    const key = await ctx.api.request('POST', '/v2/connectors', { raw: '{"type":"webhook","direction":"source","config":{"headers":{"x-\\udfff":"v"}}}', headers: { 'content-type': 'application/json' } });
    expectProblem(key, 400, 'invalid_character');
  });

  it('PATCH with a __proto__ key in config is 400 unknown_field, as on create, and changes nothing', async () => {
    const connector = await createConnector(ctx.api, { direction: 'source', config: { host: 'h', password: 'pw-proto-1' } });
    const raw = '{"config":{"__proto__":{"host":"evil"}}}';
    const created = await ctx.api.request('POST', '/v2/connectors', { raw: '{"type":"postgres","direction":"source","config":{"host":"h","password":"p","__proto__":{"x":1}}}', headers: { 'content-type': 'application/json' } });
    expectProblem(created, 400, 'validation_failed');
    expectFieldError(created, '/config/__proto__', 'unknown_field');
    const patched = await ctx.api.request('PATCH', `/v2/connectors/${connector.id}`, { raw, headers: { 'content-type': 'application/json' } });
    expectProblem(patched, 400, 'validation_failed');
    expectFieldError(patched, '/config/__proto__', 'unknown_field');
    expect((await ctx.api.request('GET', `/v2/connectors/${connector.id}`)).body.config.host).toBe('h');
  });

  it('a header block over 16 KiB is 431 headers_too_large problem+json, and the connection closes', async () => {
    const raw = await rawExchange(ctx.api.url, `GET /v2/connectors HTTP/1.1\r\nhost: x\r\nx-big: ${'a'.repeat(17 * 1024)}`, 0);
    const res = asResponse(raw);
    expectProblem(res, 431, 'headers_too_large');
    expect(res.headers['content-type']).toBe(PROBLEM_JSON);
    expect(raw.closedByServer).toBe(true);
  });

  it('a chunked body over the limit is 413 with Connection: close, and the server ends the connection', async () => {
    // Up to 1,600 chunks of 64 KiB (100 MiB, a hundred times the limit): the answer and the
    // close must come long before the client runs out of body to send.
    const raw = await rawExchange(
      ctx.api.url,
      `POST /v2/connectors HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${ctx.api.defaultKey}\r\ncontent-type: application/json\r\ntransfer-encoding: chunked`,
      1600,
    );
    const res = asResponse(raw);
    expectProblem(res, 413, 'payload_too_large');
    expect(res.headers.connection).toBe('close');
    expect(raw.closedByServer).toBe(true);
  });
});

/**
 * Answers held to the engine's own OpenAPI document, as a validating proxy in front of the API
 * would hold them: every answer is well-formed (never a 5xx, errors are problem+json with a
 * `code`), its status is one the operation documents, and its body validates against the schema
 * documented for that status (ajv's JSON Schema 2020-12, the dialect of OpenAPI 3.1).
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { expect } from 'vitest';
import { PROBLEM_JSON, type TestResponse } from './harness.js';
import type { JsonSchema } from './schema-arbitrary.js';

/** A parameter of an operation, its `$ref` resolved. */
export interface DocumentParameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required?: boolean;
  schema: JsonSchema;
}

/** One operation of the document, with what a request needs to know of it. */
export interface DocumentOperation {
  method: string;
  /** The path template, `/v2/pipelines/{id}`. */
  template: string;
  operationId: string;
  parameters: DocumentParameter[];
  requestBody?: { required?: boolean; content: Record<string, { schema: JsonSchema }> };
  responses: Record<string, JsonSchema>;
}

/** The document as these helpers read it. */
export interface OpenApiDocument {
  paths: Record<string, Record<string, Omit<DocumentOperation, 'method' | 'template'> & { parameters: Array<DocumentParameter | { $ref: string }> }>>;
  components: Record<string, Record<string, unknown>>;
}

/** Where a `$ref` of the document points: `#/components/<kind>/<name>`. */
export function resolveRef(doc: OpenApiDocument, ref: string): JsonSchema {
  const m = /^#\/components\/(\w+)\/(.+)$/.exec(ref);
  const target = m ? doc.components[m[1]!]?.[m[2]!] : undefined;
  if (target === undefined) throw new Error(`The document has no ${ref}`);
  return target as JsonSchema;
}

/** Every operation of the document, its parameters resolved. */
export function documentOperations(doc: OpenApiDocument): DocumentOperation[] {
  return Object.entries(doc.paths).flatMap(([template, ops]) =>
    Object.entries(ops).map(([method, op]) => ({
      ...op,
      method: method.toUpperCase(),
      template,
      parameters: op.parameters.map((p) => {
        const ref = (p as { $ref?: string }).$ref;
        return ref === undefined ? (p as DocumentParameter) : (resolveRef(doc, ref) as unknown as DocumentParameter);
      }),
    })),
  );
}

/**
 * The operation a request reaches, found as the server finds it: by the path as sent on the
 * wire (a client resolves `.` and `..` segments before sending), one trailing slash tolerated,
 * a `{param}` matching any non-empty segment. Undefined when none does.
 */
export function findOperation(ops: readonly DocumentOperation[], method: string, url: string): DocumentOperation | undefined {
  const parts = new URL(url, 'http://host.invalid').pathname.split('/').slice(1);
  if (parts.length > 1 && parts[parts.length - 1] === '') parts.pop();
  return ops.find((op) => {
    const segments = op.template.split('/').slice(1);
    return op.method === method.toUpperCase() && segments.length === parts.length && segments.every((s, i) => (/^\{\w+\}$/.test(s) ? parts[i] !== '' : s === parts[i]));
  });
}

const DAYS = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const RFC_3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-](\d{2}):(\d{2}))$/;

/** RFC 3339 `date-time`, on a day the calendar has: what the document promises of every timestamp. */
export function isDateTime(value: string): boolean {
  const m = RFC_3339.exec(value);
  if (!m) return false;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  const days = month === 2 && !leap ? 28 : DAYS[month - 1];
  const offsetOk = m[9] === undefined || (Number(m[9]) <= 23 && Number(m[10]) <= 59);
  return days !== undefined && day >= 1 && day <= days && hour <= 23 && minute <= 59 && second <= 59 && offsetOk;
}

const parses = (value: string, base?: string): boolean => {
  try {
    new URL(value, base);
    return true;
  } catch {
    return false;
  }
};

const DOC_ID = 'urn:ferry:openapi';

/**
 * Checks answers against `doc`. Objects whose properties the document lists are closed (no
 * other member), as in openapi.test.ts: a field the document does not describe (a leaked
 * internal column, say) fails the check rather than passing unseen.
 */
export function answerChecker(doc: OpenApiDocument): (op: DocumentOperation, res: TestResponse, what: string) => void {
  const text = JSON.stringify(doc.components).replaceAll('"#/components/', `"${DOC_ID}#/components/`);
  const components = JSON.parse(text, (_key, value: unknown) => {
    const o = value as Record<string, unknown> | null;
    return o && typeof o === 'object' && !Array.isArray(o) && o.type === 'object' && o.properties && o.additionalProperties === undefined ? { ...o, additionalProperties: false } : value;
  }) as Record<string, unknown>;
  const ajv = new Ajv2020({
    strict: false,
    allErrors: true,
    formats: { 'date-time': isDateTime, uri: (v: string) => parses(v), 'uri-reference': (v: string) => parses(v, 'http://host.invalid/') },
  });
  ajv.addSchema({ $id: DOC_ID, components });
  const compiled = new Map<string, ValidateFunction>();
  const validator = (key: string, schema: JsonSchema): ValidateFunction => {
    let validate = compiled.get(key);
    if (!validate) {
      validate = ajv.compile(JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', `"${DOC_ID}#/components/`)) as object);
      compiled.set(key, validate);
    }
    return validate;
  };

  return (op, res, what) => {
    expectWellFormed(res, what);
    let documented = op.responses[String(res.status)];
    expect(documented, `${what}: ${op.method} ${op.template} does not document ${res.status} (${res.text.slice(0, 300)})`).toBeDefined();
    if (typeof documented!.$ref === 'string') documented = resolveRef(doc, documented!.$ref);
    const content = documented!.content as Record<string, { schema: JsonSchema }> | undefined;
    const media = res.status >= 400 ? PROBLEM_JSON : 'application/json';
    const schema = content?.[media]?.schema;
    if (schema === undefined) {
      expect(res.text, `${what}: ${res.status} documents no body`).toBe('');
      return;
    }
    const validate = validator(`${op.method} ${op.template} ${res.status}`, schema);
    expect(validate(res.body), `${what}: the ${res.status} answer breaks its schema: ${JSON.stringify(validate.errors?.slice(0, 5))} in ${res.text.slice(0, 800)}`).toBe(true);
  };
}

/** Never a 5xx; an error is problem+json with its fields, a success is JSON (or empty). */
export function expectWellFormed(res: TestResponse, what: string): void {
  expect(res.status, `${what} -> ${res.status} ${res.text.slice(0, 500)}`).toBeLessThan(500);
  expect(typeof res.headers['x-request-id']).toBe('string');
  if (res.status >= 400) {
    expect(res.headers['content-type'], `${what} -> ${res.status} ${res.text.slice(0, 300)}`).toBe(PROBLEM_JSON);
    const body = res.body as Record<string, unknown>;
    expect(body, `${what}: ${res.text}`).toMatchObject({ type: `/problems/${String(body?.code)}`, status: res.status, title: expect.any(String), detail: expect.any(String), code: expect.any(String) });
  } else if (res.text.length > 0) {
    expect(res.headers['content-type'], what).toBe('application/json');
    expect(res.body, what).toBeDefined();
  }
}

import type { Engine } from '@ferry/core';
import type { AuthContext } from '@ferry/core/internal';
import type { TSchema } from '@sinclair/typebox';
import type { HttpHeaders } from './types.js';

/** How a query parameter is read and checked; the OpenAPI document is generated from it too. */
export type QueryParam =
  | { kind: 'string'; maxLength?: number; description: string }
  | { kind: 'enum'; values: readonly string[]; description: string }
  | { kind: 'timestamp'; description: string }
  | { kind: 'integer'; minimum: number; maximum: number; default: number; description: string }
  | { kind: 'limit' }
  | { kind: 'cursor' };

/** What a route handler gets. */
export interface RouteContext {
  engine: Engine;
  /** The authenticated key, or null on routes that take none. */
  auth: AuthContext | null;
  /** The key's workspace; '' on routes without a key. */
  workspaceId: string;
  params: Record<string, string>;
  /** Validated query: strings, and `limit` as a number when it parses as one. */
  query: Record<string, unknown>;
  /** The parsed JSON body; undefined when the request had none. */
  body: unknown;
  /** The body's bytes exactly as received, undecoded (signature checks need them); empty without a body. */
  rawBody: Uint8Array;
  headers: HttpHeaders;
  /** Where the host mounted the API (`/api`), `''` at the root (`HttpRequest.mountPath`). */
  mountPath: string;
}

/** What a handler answers. */
export interface RouteResult {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

/** Documentation of one response of a route, for the OpenAPI document. */
export interface ResponseDoc {
  description: string;
  /** A component name of `response-schemas.ts`, or an inline schema. */
  schema?: string | TSchema;
}

/** One row of the route table. */
export interface RouteDefinition {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  /** Template with `{name}` segments: `/v2/pipelines/{id}/events`. */
  path: string;
  operationId: string;
  summary: string;
  tag: string;
  /**
   * `api_key` with the scope the key needs; `signature` for ingest (the connector's signing
   * secret authenticates); `none` for the public OpenAPI document.
   */
  auth: { kind: 'api_key'; scope: string } | { kind: 'signature' } | { kind: 'none' };
  /**
   * `required`: a JSON body must be sent; `optional`: may be sent; `none`: nothing or `{}`.
   * The service validates the body's fields against its TypeBox schema (`bodySchema` documents it).
   */
  body: 'required' | 'optional' | 'none';
  bodySchema?: TSchema;
  /** The handler parses the body itself, after checking its signature (ingest). */
  rawBody?: boolean;
  query?: Record<string, QueryParam>;
  /** Success responses by status. */
  responses: Record<number, ResponseDoc>;
  /** Error statuses this route can answer besides the ones every route can (400, 401, 403, 429, 503...). */
  errors: number[];
  handle(ctx: RouteContext): Promise<RouteResult>;
}

/** A route with its template compiled for matching. */
export interface CompiledRoute {
  definition: RouteDefinition;
  /** Literal segments, or `null` where a parameter goes. */
  segments: Array<string | null>;
  names: string[];
}

/** Compiles the templates of a route table. */
export function compileRoutes(routes: readonly RouteDefinition[]): CompiledRoute[] {
  return routes.map((definition) => {
    const names: string[] = [];
    const segments = definition.path
      .split('/')
      .slice(1)
      .map((s) => {
        const m = /^\{(\w+)\}$/.exec(s);
        if (!m) return s;
        names.push(m[1]!);
        return null;
      });
    return { definition, segments, names };
  });
}

/** The outcome of matching a path: the route for the method, or the methods the path allows. */
export type MatchResult =
  | { kind: 'found'; route: CompiledRoute; params: Record<string, string> }
  | { kind: 'method_not_allowed'; allow: string[] }
  | { kind: 'not_found' };

// eslint-disable-next-line no-control-regex -- control characters are exactly what is looked for
const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * Matches a raw path (percent-encoding as sent) against the table. A parameter segment is
 * decoded; one that does not decode, or decodes to control characters (which no id has, and
 * which Postgres text cannot even hold: U+0000), cannot name anything, so the path matches no
 * route.
 */
export function matchRoute(routes: readonly CompiledRoute[], method: string, path: string): MatchResult {
  const parts = path.split('/').slice(1);
  if (parts.length > 1 && parts[parts.length - 1] === '') parts.pop(); // tolerate one trailing slash
  const allow: string[] = [];
  for (const route of routes) {
    if (route.segments.length !== parts.length) continue;
    const params: Record<string, string> = {};
    let ok = true;
    let p = 0;
    for (let i = 0; i < parts.length && ok; i++) {
      const segment = route.segments[i];
      const part = parts[i]!;
      if (segment === null) {
        if (part === '') ok = false;
        else {
          try {
            const value = decodeURIComponent(part);
            if (CONTROL.test(value)) ok = false;
            else params[route.names[p++]!] = value;
          } catch {
            ok = false;
          }
        }
      } else if (segment !== part) ok = false;
    }
    if (!ok) continue;
    if (route.definition.method === method) return { kind: 'found', route, params };
    allow.push(route.definition.method);
  }
  return allow.length > 0 ? { kind: 'method_not_allowed', allow } : { kind: 'not_found' };
}

import { ConnectorError } from '@ferry/core';
import { loadModule, parse } from 'libpg-query';
import { quoteReplicationIdent } from './replication-client.js';

/**
 * A backfill's row filter (`where`): a boolean SQL expression over the table's columns, parsed
 * by Postgres's own grammar (libpg_query, the server's parser compiled to WebAssembly), checked
 * against an allow-list, and rendered again by Ferry: columns quoted, every literal a parameter.
 * What the user wrote is never spliced into the SQL a chunk runs.
 *
 * Allowed: column references, literals (numbers, strings, booleans, NULL), comparisons
 * (`= <> != < > <= >=`), arithmetic (`+ - * / %`), `AND`, `OR`, `NOT`, `[NOT] IN (...)`,
 * `[NOT] BETWEEN`, `[NOT] [I]LIKE`, `IS [NOT] NULL`, `IS [NOT] TRUE|FALSE`, casts to the
 * common scalar types, and the pure functions of {@link FUNCTIONS}. Anything else (subqueries,
 * other functions, parameters, system columns, other tables' columns) is `invalid_where`.
 */
export interface RowFilter {
  /** The filter's SQL over `t.<column>`, its parameters numbered from `offset + 1`. */
  sql(offset: number): string;
  /** The parameters' values, in order: texts, each compared as its context's type. */
  readonly values: readonly (string | null)[];
}

/** Functions a filter may call: pure, cheap, one row at a time. */
const FUNCTIONS: ReadonlySet<string> = new Set(['lower', 'upper', 'length', 'char_length', 'btrim', 'ltrim', 'rtrim', 'abs', 'round', 'floor', 'ceil', 'date_trunc', 'coalesce']);

/** Binary operators a filter may use. */
const OPERATORS: ReadonlySet<string> = new Set(['=', '<>', '!=', '<', '>', '<=', '>=', '+', '-', '*', '/', '%']);

/** Types a filter may cast to, as the parser names them, and how Ferry spells them again. */
const CASTS: ReadonlyMap<string, string> = new Map([
  ['int2', 'smallint'],
  ['int4', 'integer'],
  ['int8', 'bigint'],
  ['numeric', 'numeric'],
  ['float4', 'real'],
  ['float8', 'double precision'],
  ['bool', 'boolean'],
  ['text', 'text'],
  ['varchar', 'varchar'],
  ['bpchar', 'char'],
  ['date', 'date'],
  ['time', 'time'],
  ['timestamp', 'timestamp'],
  ['timestamptz', 'timestamptz'],
  ['interval', 'interval'],
  ['uuid', 'uuid'],
  ['jsonb', 'jsonb'],
  ['json', 'json'],
]);

/** The longest filter accepted, in characters. */
const MAX_LENGTH = 4000;
/** The deepest nesting accepted: the parser and the renderer recurse. */
const MAX_DEPTH = 64;

let loaded: Promise<void> | undefined;

/** Parses and checks `where` against the table's columns; `invalid_where` naming the table and what is wrong. */
export async function rowFilter(table: string, where: string, columns: ReadonlySet<string>): Promise<RowFilter> {
  const refuse = (why: string) => new ConnectorError('invalid_where', `The where of ${table} ${why}`, { retryable: false });
  if (where.length > MAX_LENGTH) throw refuse(`is longer than ${MAX_LENGTH} characters.`);
  loaded ??= loadModule();
  await loaded;
  let tree: unknown;
  try {
    tree = await parse(`SELECT FROM ferry_filtered WHERE ${where}`);
  } catch (error) {
    throw refuse(`does not parse: ${(error as Error).message}.`);
  }
  const stmts = (tree as { stmts?: Array<{ stmt?: Record<string, unknown> }> }).stmts ?? [];
  const select = stmts.length === 1 ? (stmts[0]!.stmt?.SelectStmt as Record<string, unknown> | undefined) : undefined;
  // Anything but a lone WHERE (a second statement, ORDER BY, LIMIT, UNION, ...) is not a filter.
  const extra = select === undefined ? ['statement'] : Object.keys(select).filter((k) => !['fromClause', 'whereClause', 'limitOption', 'op'].includes(k));
  if (select === undefined || extra.length > 0 || select.op !== 'SETOP_NONE' || select.whereClause === undefined) {
    throw refuse('must be one boolean expression, nothing after it.');
  }
  const values: (string | null)[] = [];
  // Rendered once with placeholders, numbered per use.
  const parts: Array<string | number> = [];
  const emit = (text: string) => parts.push(text);
  // A literal's type is kept: an untyped parameter would take its context's type (1.5 compared
  // with an integer column would then fail to parse instead of comparing as numeric).
  const param = (value: string, type?: string) => {
    values.push(value);
    if (type) parts.push('CAST(');
    parts.push(values.length - 1);
    if (type) parts.push(` AS ${type})`);
  };
  const render = (node: unknown, depth: number): void => {
    if (depth > MAX_DEPTH) throw refuse('nests too deeply.');
    const [kind, body] = Object.entries(node as Record<string, Record<string, unknown>>)[0] ?? [];
    const b = body ?? {};
    switch (kind) {
      case 'BoolExpr': {
        const args = b.args as unknown[];
        if (b.boolop === 'NOT_EXPR') {
          emit('(NOT ');
          render(args[0], depth + 1);
          emit(')');
          return;
        }
        emit('(');
        args.forEach((arg, i) => {
          if (i > 0) emit(b.boolop === 'AND_EXPR' ? ' AND ' : ' OR ');
          render(arg, depth + 1);
        });
        emit(')');
        return;
      }
      case 'ColumnRef': {
        const fields = b.fields as Array<Record<string, { sval?: string }>>;
        const name = fields.length === 1 ? fields[0]!.String?.sval : undefined;
        if (name === undefined) throw refuse('may name only the columns of its own table, unqualified.');
        if (!columns.has(name)) throw refuse(`names ${JSON.stringify(name)}, which is not a column of the table.`);
        emit(`t.${quoteReplicationIdent(name)}`);
        return;
      }
      case 'A_Const': {
        if (b.isnull) return void emit('NULL');
        const ival = b.ival as { ival?: number } | undefined;
        const fval = b.fval as { fval?: string } | undefined;
        const sval = b.sval as { sval?: string } | undefined;
        const boolval = b.boolval as { boolval?: boolean } | undefined;
        if (ival !== undefined) return void param(String(ival.ival ?? 0), 'integer');
        if (fval !== undefined) return void param(String(fval.fval), 'numeric');
        if (sval !== undefined) return void param(String(sval.sval ?? ''));
        if (boolval !== undefined) return void emit(boolval.boolval ? 'TRUE' : 'FALSE');
        throw refuse('has a literal of a kind Ferry does not take (bit strings).');
      }
      case 'A_Expr': {
        const op = ((b.name as Array<{ String?: { sval?: string } }> | undefined) ?? []).map((n) => n.String?.sval).join('.');
        const lexpr = b.lexpr;
        const rexpr = b.rexpr as Record<string, { items?: unknown[] }> | undefined;
        const list = (items: unknown[] | undefined) => {
          (items ?? []).forEach((item, i) => {
            if (i > 0) emit(', ');
            render(item, depth + 1);
          });
        };
        switch (b.kind) {
          case 'AEXPR_OP':
            if (!OPERATORS.has(op)) throw refuse(`uses the operator ${op}, which is not allowed.`);
            emit('(');
            if (lexpr !== undefined) {
              render(lexpr, depth + 1);
              emit(' ');
            }
            emit(op === '!=' ? '<>' : op);
            emit(' ');
            render(rexpr, depth + 1);
            emit(')');
            return;
          case 'AEXPR_IN':
            emit('(');
            render(lexpr, depth + 1);
            emit(op === '=' ? ' IN (' : ' NOT IN (');
            list(rexpr?.List?.items);
            emit('))');
            return;
          case 'AEXPR_LIKE':
          case 'AEXPR_ILIKE': {
            const like = { '~~': 'LIKE', '!~~': 'NOT LIKE', '~~*': 'ILIKE', '!~~*': 'NOT ILIKE' }[op];
            if (like === undefined) throw refuse('uses a LIKE form Ferry does not take.');
            emit('(');
            render(lexpr, depth + 1);
            emit(` ${like} `);
            render(rexpr, depth + 1);
            emit(')');
            return;
          }
          case 'AEXPR_BETWEEN':
          case 'AEXPR_NOT_BETWEEN': {
            const bounds = rexpr?.List?.items ?? [];
            if (bounds.length !== 2) throw refuse('has a BETWEEN without two bounds.');
            emit('(');
            render(lexpr, depth + 1);
            emit(b.kind === 'AEXPR_BETWEEN' ? ' BETWEEN ' : ' NOT BETWEEN ');
            render(bounds[0], depth + 1);
            emit(' AND ');
            render(bounds[1], depth + 1);
            emit(')');
            return;
          }
          default:
            throw refuse(`uses ${String(b.kind).replace(/^AEXPR_/, '').toLowerCase()}, which is not allowed.`);
        }
      }
      case 'NullTest':
        emit('(');
        render(b.arg, depth + 1);
        emit(b.nulltesttype === 'IS_NULL' ? ' IS NULL)' : ' IS NOT NULL)');
        return;
      case 'BooleanTest': {
        const test = { IS_TRUE: 'IS TRUE', IS_NOT_TRUE: 'IS NOT TRUE', IS_FALSE: 'IS FALSE', IS_NOT_FALSE: 'IS NOT FALSE' }[String(b.booltesttype)];
        if (test === undefined) throw refuse('uses IS UNKNOWN, which is not allowed.');
        emit('(');
        render(b.arg, depth + 1);
        emit(` ${test})`);
        return;
      }
      case 'TypeCast': {
        const typeName = b.typeName as { names?: Array<{ String?: { sval?: string } }>; typmods?: unknown; arrayBounds?: unknown };
        const names = (typeName.names ?? []).map((n) => n.String?.sval);
        const last = names.at(-1);
        const cast = last === undefined || typeName.typmods !== undefined || typeName.arrayBounds !== undefined || (names.length === 2 && names[0] !== 'pg_catalog') || names.length > 2 ? undefined : CASTS.get(last);
        if (cast === undefined) throw refuse(`casts to ${names.join('.')}, which is not allowed.`);
        emit('CAST(');
        render(b.arg, depth + 1);
        emit(` AS ${cast})`);
        return;
      }
      case 'CoalesceExpr':
        emit('COALESCE(');
        (b.args as unknown[]).forEach((arg, i) => {
          if (i > 0) emit(', ');
          render(arg, depth + 1);
        });
        emit(')');
        return;
      case 'FuncCall': {
        const names = ((b.funcname as Array<{ String?: { sval?: string } }>) ?? []).map((n) => n.String?.sval);
        const name = names.length === 1 || (names.length === 2 && names[0] === 'pg_catalog') ? names.at(-1) : undefined;
        const plain = b.agg_star === undefined && b.agg_distinct === undefined && b.func_variadic === undefined && b.over === undefined && b.agg_filter === undefined && b.agg_order === undefined && b.agg_within_group === undefined;
        if (name === undefined || !FUNCTIONS.has(name) || !plain) throw refuse(`calls ${names.join('.')}, which is not one of ${[...FUNCTIONS].join(', ')}.`);
        emit(`${name}(`);
        ((b.args as unknown[] | undefined) ?? []).forEach((arg, i) => {
          if (i > 0) emit(', ');
          render(arg, depth + 1);
        });
        emit(')');
        return;
      }
      case 'SubLink':
        throw refuse('has a subquery, which is not allowed.');
      case 'ParamRef':
        throw refuse('has a parameter ($n): write the value itself.');
      default:
        throw refuse(`uses ${kind === undefined ? 'an expression' : kind.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase()}, which is not allowed.`);
    }
  };
  render(select.whereClause, 0);
  return {
    values,
    sql: (offset) => parts.map((p) => (typeof p === 'number' ? `$${offset + p + 1}` : p)).join(''),
  };
}

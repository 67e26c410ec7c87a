/**
 * SQL identifiers from a connector's config. Config text is never spliced into SQL as it is:
 * names must match {@link IDENTIFIER} and are always emitted double-quoted, so a name can neither
 * close its quotes nor be read as a keyword.
 */

/**
 * One plain identifier: a letter or underscore, then letters, digits, `_` or `$`, at most 63
 * characters (Postgres's NAMEDATALEN - 1). Anything else (spaces, quotes, dots inside a part)
 * is refused rather than escaped, so what a user writes is exactly what reaches the server.
 */
export const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_$]{0,62}$/;

/** A table name, optionally schema-qualified, as validated config text. */
export interface TableName {
  readonly schema?: string;
  readonly name: string;
}

/** True when `text` is one plain identifier (see {@link IDENTIFIER}). */
export function isIdentifier(text: string): boolean {
  return IDENTIFIER.test(text);
}

/** Parses `table` or `schema.table`; null when either part is not a plain identifier. */
export function parseTableName(text: string): TableName | null {
  const parts = text.split('.');
  if (parts.length === 1 && isIdentifier(parts[0]!)) return { name: parts[0]! };
  if (parts.length === 2 && isIdentifier(parts[0]!) && isIdentifier(parts[1]!)) return { schema: parts[0]!, name: parts[1]! };
  return null;
}

/**
 * Double-quotes a validated identifier. Throws on anything {@link isIdentifier} refuses: callers
 * validate configs first, so reaching this with bad text is a bug, never a reason to escape.
 */
export function quoteIdent(name: string): string {
  if (!isIdentifier(name)) throw new Error('Refusing to quote an identifier that was not validated.');
  return `"${name}"`;
}

/** `"schema"."table"` or `"table"`. */
export function quoteTable(table: TableName): string {
  return table.schema === undefined ? quoteIdent(table.name) : `${quoteIdent(table.schema)}.${quoteIdent(table.name)}`;
}

/**
 * Object names from a connector's config. Config text is never spliced into SQL as it is: names
 * must be plain identifiers and are emitted unquoted, so Snowflake resolves them
 * case-insensitively (as upper case), exactly as a user typing them in a worksheet would expect.
 */

/**
 * One plain identifier: a letter or underscore, then letters, digits, `_` or `$`, at most 255
 * characters. Anything else is refused rather than quoted.
 */
export const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_$]{0,254}$/;

/** True when `text` is one plain identifier (see {@link IDENTIFIER}). */
export function isIdentifier(text: string): boolean {
  return IDENTIFIER.test(text);
}

/** Parses `name`, `schema.name` or `database.schema.name` into its parts; null when a part is not a plain identifier. */
export function parseObjectName(text: string): string[] | null {
  const parts = text.split('.');
  return parts.length <= 3 && parts.every(isIdentifier) ? parts : null;
}

/**
 * A validated identifier, as SQL text. Throws on anything {@link isIdentifier} refuses: configs
 * are validated first, so reaching this with bad text is a bug, never a reason to escape.
 */
export function sqlIdent(name: string): string {
  if (!isIdentifier(name)) throw new Error('Refusing to emit an identifier that was not validated.');
  return name;
}

/** A validated object name (`db.schema.table`, ...) as SQL text. */
export function sqlObject(text: string): string {
  const parts = parseObjectName(text);
  if (parts === null) throw new Error('Refusing to emit an object name that was not validated.');
  return parts.join('.');
}

/**
 * The key under which the driver returns a column: Snowflake stores an unquoted name in upper
 * case, so `seq` comes back as `SEQ`. The exact spelling is tried first for a quoted column.
 */
export function resultKey(row: Record<string, unknown>, name: string): string {
  return name in row ? name : name.toUpperCase();
}

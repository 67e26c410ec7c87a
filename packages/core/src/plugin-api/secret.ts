import { CloneType, type TSchema } from '@sinclair/typebox';

/** The schema keyword that marks a config field as secret. */
export const SECRET_KEYWORD = 'x-ferry-secret';

/** The value a secret field shows in every response. */
export const REDACTED = '********';

/**
 * Marks a config field as secret: the core stores it encrypted, returns it as `"********"` and
 * hands the clear value only to the plugin's own context.
 *
 * @example
 * ```ts
 * Type.Object({ password: Secret(Type.String()) })
 * ```
 */
export function Secret<T extends TSchema>(schema: T): T {
  return CloneType(schema, { [SECRET_KEYWORD]: true }) as T;
}

/** True when the schema is marked with {@link Secret}. */
export function isSecretSchema(schema: TSchema): boolean {
  return (schema as Record<string, unknown>)[SECRET_KEYWORD] === true;
}

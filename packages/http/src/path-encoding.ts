import { decodePercent, hasInvalidCharacter } from '@ferry/core/internal';
import { HttpProblem } from './problem.js';

const INVALID_CHARACTER = 'cannot contain the NUL character (U+0000) or a lone UTF-16 surrogate';

/**
 * What is wrong with a path's encoding, or undefined when nothing is: a segment whose escapes
 * decode to bytes that are not UTF-8 is 400 `invalid_encoding`, one that decodes to a character
 * no storage keeps (the CESU-8 bytes of a lone surrogate, U+0000) 400 `invalid_character`
 * (Postgres refuses U+0000 outright, and would answer an id holding one with an error instead of
 * a 404). A segment whose escapes are malformed (`%zz`, `%A` at the end) is not judged here: it
 * names nothing, and the route lookup answers 404 (docs/api.md, Path ids).
 */
export function pathEncodingProblem(path: string): HttpProblem | undefined {
  for (const segment of path.split('/')) {
    if (!/[%\u0080-\uffff]/.test(segment)) continue;
    const decoded = decodePercent(segment, false);
    if ('text' in decoded) {
      if (hasInvalidCharacter(decoded.text)) return new HttpProblem('invalid_character', `The path ${INVALID_CHARACTER}.`);
    } else if (decoded.fault !== 'malformed_escape') {
      return decoded.fault.surrogate
        ? new HttpProblem('invalid_character', `The path ${INVALID_CHARACTER}.`)
        : new HttpProblem('invalid_encoding', 'The path is not valid UTF-8 once percent-decoded.');
    }
  }
  return undefined;
}

/** Throws {@link pathEncodingProblem}'s problem, or the `invalid_character` of a header that holds U+0000 or a lone surrogate. */
export function assertRequestCharacters(path: string, headers: Record<string, string | string[] | undefined>): void {
  const problem = pathEncodingProblem(path);
  if (problem) throw problem;
  for (const [name, value] of Object.entries(headers)) {
    const values = Array.isArray(value) ? value : [value];
    if (values.some((v) => typeof v === 'string' && hasInvalidCharacter(v))) throw new HttpProblem('invalid_character', `The ${name} header ${INVALID_CHARACTER}.`);
  }
}

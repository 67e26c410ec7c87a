// @ts-check
/* global module */
/**
 * The direction of imports inside @ferry/core (ARCHITECTURE.md, "The ladder"), checked by
 * dependency-cruiser in `npm run lint`. Core's folders stand on ranks; a file may import its own
 * folder, or a folder on a lower rank, never one above it, and no chain of imports may come back
 * to where it started. Type-only imports count: a type that climbs couples the folders as much as
 * a value does. (Which packages may import which, and only through their public entries, is the
 * ESLint rule `ferry/package-boundaries`; reaching past a core folder's `index.ts` is
 * `ferry/core-folders`.)
 *
 * Nothing breaks them, and there is no list of tolerated exceptions: when two files need each
 * other, what they share moves below both (as `webhooks/held-delivery.ts` did for the delivery
 * worker and its completer).
 */

/** Core's folders, lowest rank first; folders of one rank may import each other. */
const RANKS = [
  ['common'],
  ['plugin-api'],
  ['net', 'crypto'],
  ['storage'],
  ['context'],
  ['queue'],
  ['connectors', 'pipelines', 'events', 'webhooks', 'access'],
  ['engine'],
];

const CORE = '^packages/core/src/';

/** One rule per rank: its folders import nothing on a higher rank. */
const ladder = RANKS.slice(0, -1).map((folders, rank) => ({
  name: `ladder-${folders.join('-')}`,
  comment: `${folders.join(', ')} (rank ${rank}) may not import a folder of a higher rank: ${RANKS.slice(rank + 1).flat().join(', ')}.`,
  severity: /** @type {const} */ ('error'),
  from: { path: `${CORE}(${folders.join('|')})/` },
  to: { path: `${CORE}(${RANKS.slice(rank + 1).flat().join('|')})/` },
}));

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No chain of imports inside core comes back to where it started.',
      severity: 'error',
      from: { path: CORE },
      to: { circular: true },
    },
    ...ladder,
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // Tests may import from anywhere: they are not part of the ladder.
    exclude: { path: '\\.test\\.ts$' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};

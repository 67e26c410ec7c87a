// @ts-check
/* global module */
/**
 * The direction of imports inside @ferry/core (ARCHITECTURE.md, "The ladder"), checked by
 * dependency-cruiser in `npm run lint`. Core's folders stand on ranks; a file may import its own
 * folder, or a folder on a lower rank, never one above it, and no chain of imports may come back
 * to where it started. Type-only imports count: a type that climbs couples the folders as much as
 * a value does. A folder is entered through its door, `index.ts`, which lists what it offers the
 * rest of the engine; inside a folder (its subfolders included) files import each other freely.
 * (Which packages may import which, and only through their public entries, is the ESLint rule
 * `ferry/package-boundaries`: it also sees imports dependency-cruiser does not resolve.)
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
  ['connectors', 'backfills', 'pipelines', 'events', 'webhooks', 'access'],
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
    {
      name: 'core-folder-doors',
      comment: "A file imports another core folder only through that folder's index.ts.",
      severity: 'error',
      from: { path: `${CORE}([^/]+)/` },
      to: { path: `${CORE}[^/]+/`, pathNot: [`${CORE}$1/`, `${CORE}[^/]+/index\\.ts$`] },
    },
    {
      name: 'core-entry-doors',
      comment: "The package's entries (src/index.ts, src/internal.ts) import core folders only through their index.ts.",
      severity: 'error',
      from: { path: `${CORE}[^/]+\\.ts$` },
      to: { path: `${CORE}[^/]+/`, pathNot: `${CORE}[^/]+/index\\.ts$` },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // Tests may import from anywhere: they are not part of the ladder.
    exclude: { path: '\\.test\\.ts$' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};

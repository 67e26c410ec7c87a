// @ts-check
/**
 * ESLint rule: keeps Ferry's packages behind their doors (DESIGN.md section 1).
 *
 * - A relative import may not leave the package it is written in.
 * - A Ferry package is imported by its public entry only (`@ferry/core`, never `@ferry/core/src/...`
 *   or any other subpath), except the second entries: core's `@ferry/core/internal` (unstable: its
 *   storage, repositories and the HTTP layer's helpers) and the test kit's `@ferry/testing/suites`.
 * - Each package may import only the Ferry packages its layer allows: core none; http core; the
 *   framework adapters http, core and the console; the console (static files and the function
 *   that serves them) core's public entry for its types only, `import type`, so nothing of the
 *   engine reaches the page's bundle or the console's dependencies; plugins and the test kit
 *   core; the test servers the test kit (a plugin's own test files, `*.test.ts`, and the helpers
 *   they share, `test-*.ts`, also the test kit, its suites and the test servers); the server and
 *   everything outside `packages/` and `plugins/` (examples, cross-package tests, benchmarks) any
 *   public entry.
 * - `@ferry/core/internal` is for Ferry's own layers only: http, the test kit, the server, tests
 *   and benchmarks (a plugin's test files too). A plugin's code, the framework adapters and the
 *   examples use what any user has: `@ferry/core`.
 */
import path from 'node:path';
import { moduleSpecifiers } from './module-specifiers.js';

const INTERNAL = '@ferry/core/internal';
/** The test kit's second entry: the conformance suites, which import vitest (ESM only). */
const SUITES = '@ferry/testing/suites';
/** Entries other than a package's main one that are public: imported as they are. */
const SECOND_ENTRIES = new Set([INTERNAL, SUITES]);

const ALLOWED = {
  'packages/core': [],
  'packages/console': ['@ferry/core'],
  'packages/http': ['@ferry/core', INTERNAL],
  'packages/express': ['@ferry/core', '@ferry/http', '@ferry/console'],
  'packages/fastify': ['@ferry/core', '@ferry/http', '@ferry/console'],
  'packages/testing': ['@ferry/core', INTERNAL],
  'packages/test-servers': ['@ferry/testing'],
};

/** Imports a package may make for types only (`import type`, `export type ... from`), by package. */
const TYPES_ONLY = {
  'packages/console': ['@ferry/core'],
};

/**
 * Whether the declaration that names a module is erased from the JavaScript: `import type`,
 * `export type { ... } from` or `export type * from`. `import { type X }` is not: under
 * `verbatimModuleSyntax` it stays as `import {} from`, which loads the module.
 * @param {any} declaration
 */
function typeOnly(declaration) {
  switch (declaration?.type) {
    case 'ImportDeclaration':
      return declaration.importKind === 'type';
    case 'ExportNamedDeclaration':
    case 'ExportAllDeclaration':
      return declaration.exportKind === 'type';
    default:
      return false;
  }
}

/**
 * What a plugin file may import: core only, since a published plugin must run with nothing but
 * core; its tests and their shared helpers (`test-*.ts`, which the plugin's entry never
 * imports, so they are not published either) may also start real servers through the test kit.
 * @param {string} file
 */
function pluginAllowed(file) {
  const testOnly = file.endsWith('.test.ts') || path.basename(file).startsWith('test-');
  return testOnly ? ['@ferry/core', INTERNAL, '@ferry/testing', SUITES, '@ferry/test-servers'] : ['@ferry/core'];
}

/** @param {string} file */
function packageRootOf(file) {
  const rel = path.relative(process.cwd(), file).split(path.sep);
  if ((rel[0] === 'packages' || rel[0] === 'plugins' || rel[0] === 'examples') && rel.length > 2) {
    return rel.slice(0, 2).join('/');
  }
  return null;
}

/** @type {import('eslint').Rule.RuleModule} */
const rule = {
  meta: {
    type: 'problem',
    docs: { description: "Forbid imports that reach into another package's internals or across layers." },
    messages: {
      leavesPackage: 'Relative import "{{source}}" leaves {{root}}; import the other package by its public entry.',
      deepImport: 'Import "{{source}}" reaches past the public entry of {{pkg}}; import "{{pkg}}" instead.',
      layer: '{{root}} may not import {{pkg}} (allowed: {{allowed}}).',
      typesOnly: '{{root}} may import {{pkg}} for its types only: write `import type`.',
    },
    schema: [],
  },
  create(context) {
    const file = context.filename;
    // A package's build configuration is the repository's tooling, never shipped: it may share
    // the build settings at the root (tsup.base.ts).
    if (/^tsup(\.[a-z]+)?\.config\.ts$/.test(path.basename(file))) return {};
    const root = packageRootOf(file);
    /** @param {any} node @param {string} source */
    function check(node, source) {
      if (source.startsWith('.')) {
        if (!root) return;
        const target = path.relative(process.cwd(), path.resolve(path.dirname(file), source));
        if (!target.split(path.sep).join('/').startsWith(root + '/')) {
          context.report({ node, messageId: 'leavesPackage', data: { source, root } });
        }
        return;
      }
      const m = /^(@ferry\/[^/]+)(\/.*)?$/.exec(source);
      if (!m) return;
      const pkg = SECOND_ENTRIES.has(source) ? source : /** @type {string} */ (m[1]);
      if (!SECOND_ENTRIES.has(pkg) && m[2] && m[2] !== '/package.json') {
        context.report({ node, messageId: 'deepImport', data: { source, pkg } });
        return;
      }
      if (!root) return;
      // Outside the layered packages (the server, the examples), the internal entry is the
      // server's alone.
      const open = pkg === INTERNAL && root !== 'packages/server' ? ['@ferry/core', '@ferry/http', '@ferry/express', '@ferry/fastify', '@ferry/testing', SUITES, '@ferry/test-servers'] : undefined;
      const allowed = root.startsWith('plugins/') ? pluginAllowed(file) : (ALLOWED[/** @type {keyof ALLOWED} */ (root)] ?? open);
      if (allowed && !allowed.includes(pkg)) {
        context.report({ node, messageId: 'layer', data: { root, pkg, allowed: allowed.join(', ') || 'none' } });
        return;
      }
      const typesOnly = TYPES_ONLY[/** @type {keyof TYPES_ONLY} */ (root)];
      if (typesOnly?.includes(pkg) && !typeOnly(node.parent)) {
        context.report({ node, messageId: 'typesOnly', data: { root, pkg } });
      }
    }
    return moduleSpecifiers(check);
  },
};

export default { rules: { 'package-boundaries': rule } };

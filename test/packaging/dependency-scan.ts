/**
 * The modules a shipped file loads, read from its text: what a package needs at run time (its
 * JavaScript) and at compile time (its declarations) must be among its dependencies or peer
 * dependencies, since a user's install brings nothing else. Loading each entry in Node catches the
 * static imports too, but not the lazy ones (`await import('kafkajs')` on first use), which only
 * this scan sees.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join, relative } from 'node:path';
import ts from 'typescript';
import type { Manifest } from './public-packages.js';

/** A module a shipped file loads that its package does not declare. */
export interface Undeclared {
  /** The file, relative to the package directory. */
  file: string;
  /** The module as written (`pg-copy-streams`, `@aws-sdk/client-s3`). */
  specifier: string;
  /** The package that would have to be declared. */
  packageName: string;
  /** When the package is declared, but only as a devDependency (not installed for users). */
  devOnly: boolean;
}

/**
 * Calls that load (or locate, to load later) the module named by their first argument, by the
 * callee as written: `require`, and `require` under another name, as esbuild renames a module's
 * `const require = createRequire(import.meta.url)` (`require2`); `.resolve` of either, and of a
 * `createRequire(...)` call (in CommonJS builds `(0, m.createRequire)(url)` or
 * `m.createRequire.call(void 0, url)`), as in `createRequire(...).resolve('s3rver')`.
 */
const LOADER = /^require\d*(\.resolve)?$|createRequire[\s\S]*\)\.resolve$/;

/**
 * The bare module specifiers a JavaScript or declaration file loads (relative paths left out):
 * import and export declarations, `import()` and `import("x").T` types, `import x = require()`,
 * the loader calls above, and `/// <reference types>` (as `@types/<name>`). Read from a full
 * parse: the compiler's quick scanner (`preProcessFile`) loses its way in bundled code and
 * misses what follows.
 */
export function loadedModules(text: string, fileName = 'file.js'): string[] {
  const file = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, false);
  const names = file.typeReferenceDirectives.map((d) => `@types/${d.fileName}`);
  const literal = (node: ts.Node | undefined) => (node && ts.isStringLiteralLike(node) ? names.push(node.text) : 0);
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) literal(node.moduleSpecifier);
    else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) literal(node.moduleReference.expression);
    else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) literal(node.argument.literal);
    else if (ts.isCallExpression(node) && (node.expression.kind === ts.SyntaxKind.ImportKeyword || LOADER.test(node.expression.getText(file)))) literal(node.arguments[0]);
    ts.forEachChild(node, visit);
  };
  visit(file);
  return [...new Set(names)].filter((n) => !n.startsWith('.') && !n.startsWith('/'));
}

/** `@scope/name/sub` → `@scope/name`, `name/sub` → `name`. */
export function packageNameOf(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

/** `@scope/name` → `@types/scope__name`: where DefinitelyTyped keeps the types of a package. */
function typesPackageOf(name: string): string {
  return `@types/${name.startsWith('@') ? name.slice(1).replace('/', '__') : name}`;
}

const BUILTINS = new Set(builtinModules);

/** Files of a package that are code or declarations (source maps and metadata left out). */
function shippedCode(dir: string): string[] {
  const out: string[] = [];
  const walk = (at: string) => {
    for (const entry of readdirSync(at, { withFileTypes: true })) {
      const path = join(at, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== 'node_modules') walk(path);
      } else if (/\.(c|m)?js$|\.d\.(c|m)?ts$/.test(entry.name)) {
        out.push(path);
      }
    }
  };
  walk(dir);
  return out.sort();
}

/**
 * The modules the installed package at `dir` loads without declaring them. Node's built-ins are
 * always there; so is `@types/node` for declarations (`node:http` types), which every TypeScript
 * project on Node brings itself. A declaration may also be satisfied by the module's
 * `@types/*` package being declared (`express` by `@types/express`).
 */
export function undeclaredModules(dir: string, manifest: Manifest): Undeclared[] {
  const declared = new Set([manifest.name, ...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.peerDependencies ?? {})]);
  const dev = new Set(Object.keys(manifest.devDependencies ?? {}));
  const out: Undeclared[] = [];
  for (const path of shippedCode(dir)) {
    const isTypes = /\.d\.(c|m)?ts$/.test(path);
    for (const specifier of loadedModules(readFileSync(path, 'utf8'), path)) {
      if (specifier.startsWith('node:') || BUILTINS.has(specifier) || BUILTINS.has(packageNameOf(specifier))) continue;
      const packageName = packageNameOf(specifier);
      if (declared.has(packageName)) continue;
      if (isTypes && (packageName === '@types/node' || declared.has(typesPackageOf(packageName)))) continue;
      out.push({ file: relative(dir, path), specifier, packageName, devOnly: dev.has(packageName) || dev.has(typesPackageOf(packageName)) });
    }
  }
  return out;
}

/** A required peer dependency of one of a package's dependencies that the package neither provides nor passes on. */
export interface UnprovidedPeer {
  /** The dependency that asks for the peer. */
  dependency: string;
  peer: string;
  range: string;
}

/**
 * The required peers of the installed package's dependencies that it does not list itself.
 * A package that depends on something with a peer dependency must provide the peer (a
 * dependency) or pass it on to its user (a peer dependency of its own). npm and pnpm install a
 * missing peer anyway, which hides the gap; a strict layout (Yarn's Plug'n'Play) does not, and
 * the dependency's `require` of its peer fails there.
 * @param appDir - The app the package is installed in: each dependency's manifest is read
 *   where Node would find it (nested under the package, else at the top of the app).
 */
export function unprovidedPeers(appDir: string, manifest: Manifest): UnprovidedPeer[] {
  const own = { ...manifest.dependencies, ...manifest.peerDependencies };
  const out: UnprovidedPeer[] = [];
  for (const dependency of Object.keys(manifest.dependencies ?? {})) {
    const candidates = [join(appDir, 'node_modules', manifest.name, 'node_modules', dependency), join(appDir, 'node_modules', dependency)];
    const dir = candidates.find((d) => existsSync(join(d, 'package.json')));
    if (!dir) continue; // Not installed at all: the import checks report it.
    const inner = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest;
    for (const [peer, range] of Object.entries(inner.peerDependencies ?? {})) {
      if (inner.peerDependenciesMeta?.[peer]?.optional || peer in own) continue;
      out.push({ dependency, peer, range });
    }
  }
  return out;
}

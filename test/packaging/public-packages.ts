/**
 * The workspace's public packages (every `packages/*` and `plugins/*` whose package.json is not
 * `"private": true`) and what their manifests promise: entries, conditions, shipped files.
 * Read from the workspace on each run, so a new package or a new entry is tested without
 * anyone remembering to add it.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The fields of package.json this test reads. */
export interface Manifest {
  name: string;
  version: string;
  private?: boolean;
  main?: string;
  module?: string;
  types?: string;
  bin?: string | Record<string, string>;
  files?: string[];
  exports?: Record<string, unknown>;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  devDependencies?: Record<string, string>;
}

/** A public package of the workspace. */
export interface PublicPackage {
  /** Directory relative to the repository root, `packages/core`. */
  dir: string;
  manifest: Manifest;
}

/** One entry of a package's `exports` map (`./package.json` aside). */
export interface Entry {
  /** What a user writes: `@ferry/core`, `@ferry/core/internal`. */
  specifier: string;
  /** The `exports` key: `.`, `./internal`. */
  subpath: string;
  /** Where `import` leads (JS), if the entry has that condition. */
  importTarget?: string;
  /** Where `import` leads for TypeScript. */
  importTypes?: string;
  /** Where `require` leads (JS), if the entry has that condition. */
  requireTarget?: string;
  /** Where `require` leads for TypeScript; none when `require` is a bare path (e.g. a file that throws). */
  requireTypes?: string;
}

/**
 * The workspace's own condition, pointing at TypeScript sources that are not published. Node and
 * TypeScript apply it only when asked to (`--conditions`, `customConditions`), so the published
 * packages may keep it; the test checks nothing resolves through it.
 */
export const SOURCE_CONDITION = 'ferry-source';

/** Workspace folders that hold publishable packages. */
const PACKAGE_FOLDERS = ['packages', 'plugins'];

/** The public packages under `root`, in folder order. */
export function publicPackages(root: string): PublicPackage[] {
  const found: PublicPackage[] = [];
  for (const folder of PACKAGE_FOLDERS) {
    for (const name of readdirSync(join(root, folder)).sort()) {
      const file = join(root, folder, name, 'package.json');
      if (!existsSync(file)) continue;
      const manifest = JSON.parse(readFileSync(file, 'utf8')) as Manifest;
      if (!manifest.private) found.push({ dir: `${folder}/${name}`, manifest });
    }
  }
  return found;
}

/** A condition's target: a path, or `{ types, default }`. */
function split(target: unknown): { js?: string; types?: string } {
  if (typeof target === 'string') return { js: target };
  if (target && typeof target === 'object') {
    const t = target as Record<string, unknown>;
    return { js: typeof t.default === 'string' ? t.default : undefined, types: typeof t.types === 'string' ? t.types : undefined };
  }
  return {};
}

/** The entries of a package, `./package.json` left out (it is metadata, not code). */
export function entriesOf(manifest: Manifest): Entry[] {
  return Object.entries(manifest.exports ?? {})
    .filter(([subpath]) => subpath !== './package.json')
    .map(([subpath, value]) => {
      const conditions = (value ?? {}) as Record<string, unknown>;
      const imp = split(conditions.import);
      const req = split(conditions.require);
      return {
        specifier: subpath === '.' ? manifest.name : `${manifest.name}/${subpath.slice(2)}`,
        subpath,
        importTarget: imp.js,
        importTypes: imp.types,
        requireTarget: req.js,
        requireTypes: req.types,
      };
    });
}

/** Every path a string inside an `exports` value leads to, with the condition chain that leads there. */
function exportTargets(value: unknown, chain: string[] = []): { chain: string[]; path: string }[] {
  if (typeof value === 'string') return [{ chain, path: value }];
  if (!value || typeof value !== 'object') return [];
  return Object.entries(value as Record<string, unknown>).flatMap(([key, inner]) => exportTargets(inner, [...chain, key]));
}

/**
 * Every file the manifest points a consumer at (`main`, `module`, `types`, `bin`, each `exports`
 * target), the `ferry-source` condition aside: these must all be in the tarball.
 */
export function pointedFiles(manifest: Manifest): { field: string; path: string }[] {
  const out: { field: string; path: string }[] = [];
  for (const field of ['main', 'module', 'types'] as const) {
    const path = manifest[field];
    if (path) out.push({ field, path });
  }
  const bins = typeof manifest.bin === 'string' ? { [manifest.name]: manifest.bin } : (manifest.bin ?? {});
  for (const [name, path] of Object.entries(bins)) out.push({ field: `bin.${name}`, path });
  for (const [subpath, value] of Object.entries(manifest.exports ?? {})) {
    for (const { chain, path } of exportTargets(value)) {
      if (chain.includes(SOURCE_CONDITION)) continue;
      out.push({ field: `exports[${JSON.stringify(subpath)}]${chain.map((c) => `.${c}`).join('')}`, path });
    }
  }
  return out;
}

/** `./dist/index.js` → `dist/index.js`: the form `npm pack` lists files in. */
export function normalize(path: string): string {
  return path.replace(/^\.\//, '');
}

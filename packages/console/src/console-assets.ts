import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

/** One static file of the page, read once and kept in memory with its gzip form. */
export interface ConsoleAsset {
  readonly contentType: string;
  readonly body: Buffer;
  /** The same bytes gzipped, sent to a client that accepts gzip. */
  readonly gzipped: Buffer;
  /** A strong validator: the SHA-256 of the bytes, quoted. */
  readonly etag: string;
}

/** Builds a {@link ConsoleAsset} from bytes, computing its gzip form and its ETag. */
export function consoleAsset(contentType: string, body: Buffer): ConsoleAsset {
  return { contentType, body, gzipped: gzipSync(body, { level: 9 }), etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` };
}

const BUILT_FILES: Record<string, string> = {
  'console.js': 'text/javascript; charset=utf-8',
  'console.css': 'text/css; charset=utf-8',
};

/**
 * Where the built page lives: `dist/assets` beside the built module (`dist/index.js`), or, when
 * this module runs from its TypeScript source (the workspace's tests), the package's
 * `dist/assets`.
 */
function assetsFolder(): string | undefined {
  const here = dirname(fileURLToPath(import.meta.url));
  return [join(here, 'assets'), join(here, '..', 'dist', 'assets')].find((folder) => existsSync(join(folder, 'console.js')));
}

/**
 * The built page's files by name (`console.js`, `console.css`), or `undefined` when the package
 * was not built (a checkout where `npm run build` has not run yet).
 */
export function loadBuiltAssets(): Map<string, ConsoleAsset> | undefined {
  const folder = assetsFolder();
  if (folder === undefined) return undefined;
  return new Map(Object.entries(BUILT_FILES).map(([name, type]) => [name, consoleAsset(type, readFileSync(join(folder, name)))]));
}

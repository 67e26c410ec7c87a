import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The package whose version `ferry --version` prints. */
const PACKAGE_NAME = '@ferry/server';

/**
 * The version of `@ferry/server`, from its package.json, read when asked rather than copied in
 * at build time. The file is one folder up from this module in both forms the CLI runs in: from
 * source (`src/version.ts`) and built (tsup writes every entry and chunk flat into `dist/`).
 *
 * @throws an error saying where it looked when that file is not the package's (a bundle of this
 *   module into another program).
 */
export function serverVersion(): string {
  const url = new URL('../package.json', import.meta.url);
  let manifest: { name?: unknown; version?: unknown } | undefined;
  try {
    manifest = JSON.parse(readFileSync(url, 'utf8')) as { name?: unknown; version?: unknown };
  } catch {
    manifest = undefined;
  }
  if (manifest?.name !== PACKAGE_NAME || typeof manifest.version !== 'string') {
    throw new Error(`Cannot tell the version: ${fileURLToPath(url)} is not the package.json of ${PACKAGE_NAME}`);
  }
  return manifest.version;
}

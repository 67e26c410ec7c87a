import { execFileSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const PACKAGE = join(process.cwd(), 'packages', 'console');

function newest(folder: string): number {
  return Math.max(
    0,
    ...readdirSync(folder, { withFileTypes: true }).map((entry) => {
      const path = join(folder, entry.name);
      return entry.isDirectory() ? newest(path) : statSync(path).mtimeMs;
    }),
  );
}

/**
 * Builds the console's page when its sources are newer than the built files: the tests serve
 * what `npm run build` made (as a host does), and an edit in the page's sources must not be
 * tested against the page built before it. `npm test` builds every package first anyway.
 */
export function ensureConsoleBuilt(): void {
  let built = 0;
  try {
    built = statSync(join(PACKAGE, 'dist', 'assets', 'console.js')).mtimeMs;
  } catch {
    built = 0;
  }
  if (built >= newest(join(PACKAGE, 'src', 'app'))) return;
  execFileSync('npx', ['tsup', '--config', 'tsup.app.config.ts', '--silent'], { cwd: PACKAGE, stdio: 'inherit' });
}

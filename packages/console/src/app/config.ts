/** Reads a `<meta name>` the server wrote into the page (see console-page.ts). */
function meta(name: string): string {
  return document.querySelector<HTMLMetaElement>(`meta[name="${name}"]`)?.content ?? '';
}

/** Where the console is mounted, without a trailing slash (`/console`). */
export const CONSOLE_BASE = meta('ferry-console-base').replace(/\/+$/, '');

/** Where the `/v2` API is mounted on this origin (`''` or `/api`). */
export const API_BASE = meta('ferry-api-base').replace(/\/+$/, '');

/** Escapes text for an HTML attribute value in double quotes. */
function attribute(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/**
 * The page's HTML. Where the console is mounted and where the API is are written into `<meta>`
 * elements, which the script reads: the Content-Security-Policy forbids inline scripts, so no
 * configuration can be passed as code.
 *
 * @param basePath - the console's mount path, without a trailing slash (`/console`).
 * @param apiBase - the path the `/v2` API is mounted under (`''` at the root, `/api`).
 */
export function consolePage(basePath: string, apiBase: string): string {
  const base = attribute(basePath);
  return [
    '<!doctype html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    '<meta name="referrer" content="no-referrer">',
    '<meta name="color-scheme" content="light dark">',
    '<title>Ferry Console</title>',
    `<meta name="ferry-console-base" content="${base}">`,
    `<meta name="ferry-api-base" content="${attribute(apiBase)}">`,
    `<link rel="icon" href="${base}/favicon.svg" type="image/svg+xml">`,
    `<link rel="stylesheet" href="${base}/assets/console.css">`,
    `<script type="module" src="${base}/assets/console.js"></script>`,
    '</head>',
    '<body>',
    '<noscript>The Ferry console needs JavaScript.</noscript>',
    '<div id="app"></div>',
    '</body>',
    '</html>',
    '',
  ].join('\n');
}

/** The tab icon: a hull on a wave, in the console's accent colour. */
export const FAVICON_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#1f5fbf"/>' +
  '<path d="M6 17h20l-3 6H9z" fill="#fff"/><path d="M14 8h5v7h-5z" fill="#fff"/></svg>\n';

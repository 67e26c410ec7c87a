/**
 * The API key, kept in this tab's sessionStorage: it survives a reload, ends with the tab, and
 * is never put in a URL or a cookie, so no request carries it but the console's own calls.
 */
const KEY = 'ferry.console.api-key';

/** The key the user entered in this tab, if any. */
export function storedApiKey(): string | null {
  try {
    return sessionStorage.getItem(KEY);
  } catch {
    return null;
  }
}

/** Keeps `key` for this tab. */
export function storeApiKey(key: string): void {
  sessionStorage.setItem(KEY, key);
}

/** Forgets the key (sign out, or a key the API no longer takes). */
export function forgetApiKey(): void {
  sessionStorage.removeItem(KEY);
}

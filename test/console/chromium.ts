import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';

/** Debian's Chromium (`apt-get install chromium`), or the browser FERRY_CHROMIUM names. */
export const CHROMIUM = process.env.FERRY_CHROMIUM ?? '/usr/bin/chromium';

/** Where the console tests write their screenshots, for a person to look at. */
export const SCREENSHOTS = join(process.cwd(), '.tmp', 'console-screenshots');

/**
 * Starts a headless Chromium: the system's own (no browser download), with none of its
 * background connections, which a closed network refuses. Playwright gives every launch a new
 * empty profile of its own.
 */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`No Chromium at ${CHROMIUM}: install Debian's package (apt-get install -y chromium; npm test does it) or set FERRY_CHROMIUM.`);
  mkdirSync(SCREENSHOTS, { recursive: true });
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

/** The system Chromium (Debian package `chromium`); a browser is never downloaded. */
export const CHROMIUM = '/usr/bin/chromium';

const ci = process.env['CI'] === 'true';

/**
 * node:test `skip` value for browser suites: one line when Chromium is not
 * installed here; under CI never a skip (CI installs it), so the suite fails.
 */
export const chromiumSkip: string | false =
  !existsSync(CHROMIUM) && !ci && `${CHROMIUM} is missing: browser tests skipped (apt-get install -y chromium; CI installs it)`;

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: CI must install chromium`);
  return chromium.launch({
    executablePath: CHROMIUM,
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

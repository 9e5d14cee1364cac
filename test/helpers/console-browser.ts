import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, BrowserContextOptions, Page } from 'playwright-core';
import { CONSOLE_CSP } from '../../src/gateway/console/layout.ts';
import type { MailTransport } from '../../src/platform/mail-transport.ts';

/** The viewport every console page opens at, and the one shoot() returns to. */
export const DESKTOP = { width: 1280, height: 900 };
/** The phone shoot() checks each page against: nothing may be wider. */
export const PHONE = { width: 375, height: 812 };

/** One document (a navigation) the gateway sent to a page, with its CSP header. */
export interface ConsoleDocument {
  method: string;
  path: string;
  status: number;
  csp: string | undefined;
}

/** The path of the page's URL. */
export const path = (page: Page): string => new URL(page.url()).pathname;

/** The text of the page's h1. */
export const h1 = (page: Page): Promise<string> => page.locator('h1').innerText();

/** Runs an action that submits a form, and waits for the page it leads to. */
export async function submitting(page: Page, act: () => Promise<void>): Promise<void> {
  const loaded = page.waitForEvent('load');
  await act();
  await loaded;
}

/** Lets the charts follow a change of width (Chart.js resizes on the next frames). */
export const settle = (page: Page): Promise<void> =>
  page.evaluate(() => new Promise<void>((r) => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(r, 50)))));

/**
 * The emails the gateway sends, kept in memory instead of sent: give
 * `transport` to the gateway, then take each sign-in link with linkFor().
 */
export class MailInbox {
  readonly mails: { to: string; text: string }[] = [];
  readonly transport: MailTransport = { send: async (m) => void this.mails.push({ to: m.to, text: m.text }) };

  /**
   * The link of the newest email to `email` (taken out of the inbox), moved
   * to `baseUrl`: the live gateway listens on a port chosen at start, which
   * its GATEWAY_BASE_URL cannot name. Waits up to 5 s for the email.
   */
  /**
   * Confirms an API sign-up's address by the link of its confirmation email
   * (the newest email to `email`, taken out of the inbox), through the API,
   * so that sign-ins of the address reach the workspace (docs/console.md).
   */
  async confirmSignup(email: string, gatewayUrl: string): Promise<void> {
    const token = new URL(await this.linkFor(email, gatewayUrl)).searchParams.get('token');
    const r = await fetch(`${gatewayUrl}/api/v1/auth/confirm-email`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token }) });
    if (r.status !== 200) throw new Error(`confirmation of ${email}: ${r.status} ${await r.text()}`);
  }

  async linkFor(email: string, baseUrl: string): Promise<string> {
    for (let i = 0; i < 200; i++) {
      const mail = this.mails.filter((m) => m.to === email).at(-1);
      if (mail) {
        this.mails.splice(this.mails.indexOf(mail), 1);
        const link = new URL(/https?:\/\/\S+/.exec(mail.text)![0]);
        return `${baseUrl}${link.pathname}${link.search}`;
      }
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`no sign-in email to ${email}`);
  }
}

export interface ConsoleBrowserOptions {
  browser: Browser;
  /** The gateway's origin (no trailing slash): its documents are recorded, and sign-in goes there. */
  baseUrl: string;
  /** Where the gateway's sign-in emails land. */
  inbox: MailInbox;
  /** The directory shoot() writes its screenshots to (created if missing). */
  shots: string;
  /** Options of every browser context newPage() opens (the viewport is DESKTOP). */
  context?: BrowserContextOptions;
  /** Whether shoot() lets the charts settle (settle()) after each change of width, so they show whole and at their size. */
  settleCharts?: boolean;
}

/**
 * The console's pages in one Chromium, for one suite: each page opened by
 * newPage() records what it reports as an error (a CSP violation is one) and
 * every document the gateway sends it; audit() checks a page against what
 * every console page must be, shoot() audits and screenshots it at desktop
 * and phone width, signIn() signs in by the emailed link.
 */
export class ConsoleBrowser {
  /** Everything a page reported as an error (CSP violations are reported so), by page. */
  readonly errors = new Map<Page, string[]>();
  /** Every document the gateway sent to a page of this suite, in order. */
  readonly documents: ConsoleDocument[] = [];
  readonly #options: ConsoleBrowserOptions;

  constructor(options: ConsoleBrowserOptions) {
    this.#options = options;
    mkdirSync(options.shots, { recursive: true });
  }

  /** A page in a new browser context (`extra` over the suite's context options), recording its errors and documents. */
  async newPage(extra: BrowserContextOptions = {}): Promise<{ context: BrowserContext; page: Page }> {
    const context = await this.#options.browser.newContext({ viewport: DESKTOP, ...this.#options.context, ...extra });
    context.setDefaultTimeout(10_000);
    const page = await context.newPage();
    const errors: string[] = [];
    this.errors.set(page, errors);
    page.on('console', (m) => {
      // A refused form's own 4xx page (or a 404 page) is the answer under test, not a fault of the page.
      const refusedDocument = /^Failed to load resource: the server responded with a status of 4\d\d/.test(m.text()) && !m.location().url.includes('/assets/');
      if (m.type() === 'error' && !refusedDocument) errors.push(m.text());
    });
    page.on('pageerror', (e) => void errors.push(e.message));
    page.on('response', (r) => {
      if (r.request().isNavigationRequest() && r.url().startsWith(this.#options.baseUrl)) {
        this.documents.push({ method: r.request().method(), path: new URL(r.url()).pathname, status: r.status(), csp: r.headers()['content-security-policy'] });
      }
    });
    return { context, page };
  }

  /**
   * What every console page must be: the last document served with the
   * console's CSP; no <script> without src, no on* handler, no style
   * attribute; every control labelled; one h1 and no heading level skipped;
   * nothing reported as an error (a CSP violation is reported so).
   */
  async audit(page: Page): Promise<void> {
    const last = this.documents.at(-1);
    assert.ok(last, 'a document was loaded');
    assert.equal(last.csp, CONSOLE_CSP, `CSP of ${last.path}`);
    const found = await page.evaluate(() => {
      // A data block (type application/json, which charts read) is never run; any other script must come from a file.
      const inline = [...document.querySelectorAll('script')].filter((s) => !s.src && s.type !== 'application/json').length;
      const handlers: string[] = [];
      const styled: string[] = [];
      for (const el of document.querySelectorAll('*')) {
        for (const attr of el.getAttributeNames()) {
          if (attr.startsWith('on')) handlers.push(`${el.tagName} ${attr}`);
          // Chart.js sizes its canvas through the CSSOM (el.style), which the CSP allows and which shows as an attribute; the
          // served HTML has none (console.test.ts), and a style the CSP blocked would be reported as an error below.
          if (attr === 'style' && el.tagName !== 'CANVAS') styled.push(el.tagName);
        }
      }
      const unlabelled = [...document.querySelectorAll<HTMLInputElement | HTMLSelectElement>('input:not([type=hidden]), select, textarea')]
        .filter((c) => c.labels === null || c.labels.length === 0)
        .map((c) => c.id || c.name);
      const levels = [...document.querySelectorAll('h1, h2, h3, h4, h5, h6')].map((h) => Number(h.tagName[1]));
      return { inline, handlers, styled, unlabelled, levels };
    });
    assert.equal(found.inline, 0, `inline <script> on ${path(page)}`);
    assert.deepEqual(found.handlers, [], `inline handlers on ${path(page)}`);
    assert.deepEqual(found.styled, [], `style attributes on ${path(page)}`);
    assert.deepEqual(found.unlabelled, [], `controls without a label on ${path(page)}`);
    assert.equal(found.levels.filter((l) => l === 1).length, 1, `one h1 on ${path(page)}`);
    for (let i = 1; i < found.levels.length; i++) assert.ok(found.levels[i]! <= found.levels[i - 1]! + 1, `heading order on ${path(page)}: ${found.levels}`);
    assert.deepEqual(this.errors.get(page), [], `errors reported on ${path(page)}`);
  }

  /**
   * The page audited, then shot at desktop and phone width as
   * `<shots>/<name>-desktop.png` and `-phone.png` (nothing wider than the
   * phone), then back to desktop.
   */
  async shoot(page: Page, name: string): Promise<void> {
    const { shots, settleCharts } = this.#options;
    const settled = async () => {
      if (settleCharts) await settle(page);
    };
    await this.audit(page);
    await settled();
    await page.screenshot({ path: join(shots, `${name}-desktop.png`), fullPage: true });
    await page.setViewportSize(PHONE);
    await settled();
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(width <= PHONE.width, `${name} is ${width}px wide on a ${PHONE.width}px phone`);
    await page.screenshot({ path: join(shots, `${name}-phone.png`), fullPage: true });
    await page.setViewportSize(DESKTOP);
    await settled();
  }

  /**
   * Asks for a link on the sign-in page (with the keyboard), opens the
   * email's link, signs in, and lands on the Overview (/). With `shots`, the
   * two pages on the way are shot as `<shots>-check-email` and
   * `<shots>-magic-link`.
   */
  async signIn(page: Page, email: string, shots?: string): Promise<void> {
    const { baseUrl, inbox } = this.#options;
    await page.goto(`${baseUrl}/sign-in`);
    await page.getByLabel('Email address').fill(email);
    await submitting(page, () => page.getByLabel('Email address').press('Enter'));
    assert.equal(await h1(page), 'Check your email');
    if (shots) await this.shoot(page, `${shots}-check-email`);
    await page.goto(await inbox.linkFor(email, baseUrl));
    if (shots) await this.shoot(page, `${shots}-magic-link`);
    await submitting(page, () => page.getByRole('button', { name: 'Sign in to the console' }).click());
    assert.equal(path(page), '/');
  }
}

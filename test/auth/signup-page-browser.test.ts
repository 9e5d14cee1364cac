import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import pino from 'pino';
import { loadGatewayConfig } from '../../src/gateway/config.ts';
import { createGatewayService, type GatewayService } from '../../src/gateway/service.ts';
import { freePort, startTestAuth, type TestAuth, uniqueEmail } from '../helpers/auth.ts';
import { chromiumSkip, launchChromium } from '../helpers/chromium.ts';
import { freshDatabase, type TestDatabase } from '../helpers/database.ts';
import { firstLink } from '../helpers/smtp.ts';

const CLIENT_ID = 'gateway-console';
const CLIENT_SECRET = 'gateway-console-secret-0123456789abcdef';
/** Git-ignored: each page at desktop and phone width, for a person to look at. */
const SHOTS = join(import.meta.dirname, '..', '.screenshots', 'auth-signup');
const DESKTOP = { width: 1280, height: 900 };
const PHONE = { width: 375, height: 812 };

/**
 * A newcomer with nothing but a browser: real Chromium, the real account
 * service (OAuth public, the console as its static client) and the whole
 * gateway, each on its own port, wired as `npm start` wires them. They press
 * "Sign in with your account" in the console, create an account on the
 * account service's sign-up page, open the link of the email the test SMTP
 * server received, continue, sign in and allow, and land in a new workspace.
 * Every account-service page on the way is audited like the console's.
 */
describe('signing up on the account service from the console (Chromium, both services)', { skip: chromiumSkip }, () => {
  let browser: Browser;
  let auth: TestAuth;
  let gateway: GatewayService;
  let gatewayDb: TestDatabase;
  let gwUrl: string;

  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    browser = await launchChromium();
    const port = await freePort();
    gwUrl = `http://127.0.0.1:${port}`;
    auth = await startTestAuth('sqlite', {
      OAUTH_CLIENT_ID: CLIENT_ID,
      OAUTH_CLIENT_SECRET: CLIENT_SECRET,
      OAUTH_CLIENT_REDIRECT_URIS: `${gwUrl}/sign-in/account/callback`,
      OAUTH_PUBLIC_ENDPOINTS: 'true',
    });
    gatewayDb = await freshDatabase('sqlite');
    const config = loadGatewayConfig({
      DATA_DIR: gatewayDb.dataDir,
      GATEWAY_ENCRYPTION_KEY: 'c'.repeat(64),
      GATEWAY_BASE_URL: gwUrl,
      GATEWAY_ACCOUNTS_URL: auth.url,
      GATEWAY_ACCOUNTS_CLIENT_ID: CLIENT_ID,
      GATEWAY_ACCOUNTS_CLIENT_SECRET: CLIENT_SECRET,
      GATEWAY_USAGE_JOURNAL_DIR: 'off',
    });
    gateway = await createGatewayService(config, {
      logger: pino({ level: 'silent' }),
      processMetrics: false,
      transport: { send: async () => {} },
    });
    gateway.runtime.startWorkers();
    await gateway.runtime.listen('127.0.0.1', port);
  });
  after(async () => {
    await browser?.close();
    await gateway?.close();
    await gatewayDb?.drop();
    await auth?.close();
  });

  /** The CSP header of every account-service document the browser loaded. */
  const documents: { path: string; csp: string | undefined }[] = [];
  const consoleErrors: string[] = [];

  async function newPage(): Promise<Page> {
    const context = await browser.newContext({ viewport: DESKTOP });
    context.setDefaultTimeout(10_000);
    const page = await context.newPage();
    page.on('console', (m) => {
      // A refused form's own 4xx page is the answer under test, not a fault of the page.
      if (m.type() === 'error' && !/^Failed to load resource: the server responded with a status of 4\d\d/.test(m.text())) consoleErrors.push(m.text());
    });
    page.on('pageerror', (e) => void consoleErrors.push(e.message));
    page.on('response', (r) => {
      if (r.request().isNavigationRequest() && r.url().startsWith(auth.url)) {
        documents.push({ path: new URL(r.url()).pathname, csp: r.headers()['content-security-policy'] });
      }
    });
    return page;
  }
  const h1 = (page: Page) => page.locator('h1').innerText();
  const main = (page: Page) => page.locator('main').innerText();
  const at = (page: Page, pathname: string) => page.waitForURL((u) => u.origin === auth.url && u.pathname === pathname);
  const tenantsOf = (email: string) => gateway.deps.db.selectFrom('tenants').selectAll().where('email', '=', email).execute();

  /**
   * What every account-service page must be, as the console's audit has it:
   * served with a CSP that allows no script at all; no <script>, no on*
   * handler, no style attribute; every control labelled; one h1 and no
   * heading level skipped; nothing reported as an error (a CSP violation is
   * reported so); and no horizontal scrolling on a 375 px phone.
   */
  async function audit(page: Page, name: string): Promise<void> {
    const last = documents.at(-1);
    assert.ok(last && last.path === new URL(page.url()).pathname, `the document of ${name} was seen`);
    assert.match(last.csp ?? '', /^default-src 'none'; style-src 'unsafe-inline'; form-action 'self'[^;]*; frame-ancestors 'none'; base-uri 'none'$/, `CSP of ${name}`);
    const found = await page.evaluate(() => {
      const scripts = document.querySelectorAll('script').length;
      const handlers: string[] = [];
      const styled: string[] = [];
      for (const el of document.querySelectorAll('*')) {
        for (const attr of el.getAttributeNames()) {
          if (attr.startsWith('on')) handlers.push(`${el.tagName} ${attr}`);
          if (attr === 'style') styled.push(el.tagName);
        }
      }
      const unlabelled = [...document.querySelectorAll<HTMLInputElement>('input:not([type=hidden]), select, textarea')]
        .filter((c) => c.labels === null || c.labels.length === 0)
        .map((c) => c.id || c.name);
      const levels = [...document.querySelectorAll('h1, h2, h3, h4, h5, h6')].map((h) => Number(h.tagName[1]));
      return { scripts, handlers, styled, unlabelled, levels, lang: document.documentElement.lang, title: document.title };
    });
    assert.equal(found.scripts, 0, `<script> on ${name}`);
    assert.deepEqual(found.handlers, [], `inline handlers on ${name}`);
    assert.deepEqual(found.styled, [], `style attributes on ${name}`);
    assert.deepEqual(found.unlabelled, [], `controls without a label on ${name}`);
    assert.equal(found.levels.filter((l) => l === 1).length, 1, `one h1 on ${name}`);
    for (let i = 1; i < found.levels.length; i++) assert.ok(found.levels[i]! <= found.levels[i - 1]! + 1, `heading order on ${name}: ${found.levels}`);
    assert.equal(found.lang, 'en');
    assert.ok(found.title, `a title on ${name}`);
    assert.deepEqual(consoleErrors, [], `errors reported on ${name}`);
    await page.screenshot({ path: join(SHOTS, `${name}-desktop.png`), fullPage: true });
    await page.setViewportSize(PHONE);
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(width <= PHONE.width, `${name} is ${width}px wide on a ${PHONE.width}px phone`);
    await page.screenshot({ path: join(SHOTS, `${name}-phone.png`), fullPage: true });
    await page.setViewportSize(DESKTOP);
  }

  test('from "Sign in with your account" to a new workspace: create the account, confirm by the emailed link, continue, sign in, allow', async () => {
    const page = await newPage();
    const email = uniqueEmail();
    const password = 'my first passphrase 2026';

    await page.goto(`${gwUrl}/sign-in`);
    await page.getByRole('button', { name: 'Sign in with your account' }).click();
    await at(page, '/oauth/login');
    const requestId = new URL(page.url()).searchParams.get('request');
    assert.ok(requestId);
    await audit(page, 'sign-in');

    await page.getByRole('link', { name: 'Create an account' }).click();
    await at(page, '/oauth/signup');
    assert.equal(new URL(page.url()).searchParams.get('request'), requestId, 'the same authorization request');
    assert.equal(await h1(page), 'Create an account');
    assert.match(await main(page), /to continue to 127\.0\.0\.1/);
    await audit(page, 'sign-up');

    // With the keyboard only; the passwords differ the first time.
    await page.getByRole('textbox', { name: 'Email' }).focus();
    await page.keyboard.type(email);
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'password', 'Tab goes from the address to the password');
    await page.keyboard.type(password);
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'confirm');
    await page.keyboard.type(`${password}?`);
    await page.keyboard.press('Enter');
    await page.waitForLoadState();
    await page.getByRole('alert').waitFor();
    assert.match(await page.getByRole('alert').innerText(), /The two passwords differ; type the same password twice\./);
    const described = await page.evaluate(() => {
      const input = document.getElementById('confirm')!;
      const ids = (input.getAttribute('aria-describedby') ?? '').split(' ');
      return { invalid: input.getAttribute('aria-invalid'), text: ids.map((id) => document.getElementById(id)?.textContent).join(' ') };
    });
    assert.deepEqual(described, { invalid: 'true', text: 'Error: The two passwords differ; type the same password twice.' });
    assert.equal(await page.getByRole('textbox', { name: 'Email' }).inputValue(), email, 'the address is kept');
    assert.equal(await page.getByLabel('Password', { exact: true }).inputValue(), '', 'the passwords are not');
    await audit(page, 'sign-up-errors');
    // The summary's link takes the focus to the field at fault.
    await page.getByRole('link', { name: 'The two passwords differ; type the same password twice.' }).click();
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'confirm');

    await page.getByLabel('Password', { exact: true }).fill(password);
    await page.getByLabel('Password again').fill(password);
    await page.getByRole('button', { name: 'Create the account' }).click();
    await at(page, '/oauth/signup/sent');
    assert.equal(await h1(page), 'Check your email');
    assert.ok((await main(page)).includes(`We sent an email to ${email}.`));
    await audit(page, 'check-email');
    assert.deepEqual(await tenantsOf(email), [], 'no workspace yet');

    // The emailed link, in the same browser.
    const mail = await auth.verificationMail(email);
    await page.goto(firstLink(mail));
    await audit(page, 'verify');
    await page.getByRole('button', { name: 'Confirm my email address' }).click();
    await page.waitForLoadState();
    assert.equal(await h1(page), 'Email confirmed');
    await audit(page, 'verified');
    await page.getByRole('button', { name: 'Continue' }).click();
    await at(page, '/oauth/login');
    assert.equal(new URL(page.url()).searchParams.get('request'), requestId, 'back to the same authorization request');

    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await at(page, '/oauth/consent');
    await audit(page, 'consent');
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL((u) => u.origin === gwUrl && u.pathname === '/');
    assert.equal(await h1(page), 'Overview');
    assert.ok((await page.locator('header').innerText()).includes(email), 'signed in to the console as the new account');
    assert.equal((await tenantsOf(email)).length, 1, 'a new workspace for the address');
  });

  test('"Already have an account? Sign in" goes back to the sign-in page of the same request', async () => {
    const page = await newPage();
    await page.goto(`${gwUrl}/sign-in`);
    await page.getByRole('button', { name: 'Sign in with your account' }).click();
    await at(page, '/oauth/login');
    const requestId = new URL(page.url()).searchParams.get('request');
    await page.getByRole('link', { name: 'Create an account' }).click();
    await at(page, '/oauth/signup');
    await page.getByRole('link', { name: 'Sign in' }).click();
    await at(page, '/oauth/login');
    assert.equal(new URL(page.url()).searchParams.get('request'), requestId);
    assert.equal(await h1(page), 'Sign in');
  });
});

import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import pino from 'pino';
import { loadGatewayConfig } from '../../../src/gateway/config.ts';
import { createGatewayService, type GatewayService } from '../../../src/gateway/service.ts';
import { freePort, PASSWORD, startTestAuth, type TestAuth, uniqueEmail } from '../../helpers/auth.ts';
import { chromiumSkip, launchChromium } from '../../helpers/chromium.ts';
import { freshDatabase, type TestDatabase } from '../../helpers/database.ts';
import { firstLink } from '../../helpers/smtp.ts';

const CLIENT_ID = 'gateway-console';
const CLIENT_SECRET = 'gateway-console-secret-0123456789abcdef';

/**
 * "Sign in with your account" as a newcomer does it: real Chromium, the real
 * account service (OAuth public, the gateway's console as its static
 * confidential client) and the whole gateway, each on its own port. The
 * account is registered, verified through the link of the email the test
 * SMTP server received, and signs in to the console through the account
 * service's sign-in and consent pages.
 */
describe('the console signs in with the account service (Chromium, both services)', { skip: chromiumSkip }, () => {
  let browser: Browser;
  let auth: TestAuth;
  let gateway: GatewayService;
  let gatewayDb: TestDatabase;
  let gwUrl: string;
  const inbox: { to: string; text: string }[] = [];
  const logs: string[] = [];

  before(async () => {
    browser = await launchChromium();
    const port = await freePort();
    gwUrl = `http://127.0.0.1:${port}`;
    auth = await startTestAuth('sqlite', {
      OAUTH_CLIENT_ID: CLIENT_ID,
      OAUTH_CLIENT_SECRET: CLIENT_SECRET,
      OAUTH_CLIENT_REDIRECT_URIS: `${gwUrl}/sign-in/account/callback`,
      OAUTH_PUBLIC_ENDPOINTS: 'true',
      AUTH_LIMIT_LOGIN: '1000/300',
      AUTH_LIMIT_REGISTER: '1000/3600',
    });
    gatewayDb = await freshDatabase('sqlite');
    const config = loadGatewayConfig({
      DATA_DIR: gatewayDb.dataDir,
      GATEWAY_ENCRYPTION_KEY: 'c'.repeat(64),
      GATEWAY_BASE_URL: gwUrl,
      GATEWAY_ACCOUNTS_URL: auth.url,
      GATEWAY_ACCOUNTS_CLIENT_ID: CLIENT_ID,
      GATEWAY_ACCOUNTS_CLIENT_SECRET: CLIENT_SECRET,
      GATEWAY_LIMIT_SIGNUP: '1000/60',
      GATEWAY_USAGE_JOURNAL_DIR: 'off',
    });
    const sink = new Writable({
      write(chunk, _enc, done) {
        logs.push(String(chunk));
        done();
      },
    });
    gateway = await createGatewayService(config, {
      logger: pino({ level: 'debug' }, sink),
      processMetrics: false,
      transport: { send: async (m) => void inbox.push({ to: m.to, text: m.text }) },
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

  async function newPage(): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    context.setDefaultTimeout(10_000);
    return context.newPage();
  }
  const main = (page: Page) => page.locator('main').innerText();
  const h1 = (page: Page) => page.locator('h1').innerText();
  const tenantsOf = (email: string) => gateway.deps.db.selectFrom('tenants').selectAll().where('email', '=', email).execute();

  /** Registers an account and confirms it through its email's link, in the browser. */
  async function newcomer(page: Page): Promise<{ email: string; password: string }> {
    const email = await auth.register(uniqueEmail());
    const link = firstLink(await auth.verificationMail(email));
    await page.goto(link);
    await page.getByRole('button', { name: 'Confirm my email address' }).click();
    await page.waitForLoadState();
    assert.match(await main(page), /confirmed/i);
    return { email, password: PASSWORD };
  }

  /** From the console's sign-in page to the account service's pages. */
  async function pressAccountButton(page: Page): Promise<void> {
    await page.goto(`${gwUrl}/sign-in`);
    await page.getByRole('button', { name: 'Sign in with your account' }).click();
  }
  async function signInAtAccounts(page: Page, who: { email: string; password: string }): Promise<void> {
    await page.waitForURL((u) => u.origin === auth.url && u.pathname === '/oauth/login');
    await page.getByLabel('Email').fill(who.email);
    await page.getByLabel('Password').fill(who.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
  }
  async function inConsole(page: Page): Promise<void> {
    await page.waitForURL((u) => u.origin === gwUrl && u.pathname === '/');
    assert.equal(await h1(page), 'Overview');
  }

  test('a newcomer registers, verifies by the emailed link, signs in with the account, consents, and lands in a workspace made for the address; again: the same one', async () => {
    const page = await newPage();
    const who = await newcomer(page);
    const callbacks: string[] = [];
    page.on('request', (r) => {
      if (r.url().startsWith(`${gwUrl}/sign-in/account/callback`)) callbacks.push(r.url());
    });
    await pressAccountButton(page);
    await signInAtAccounts(page, who);
    await page.waitForURL((u) => u.pathname === '/oauth/consent');
    assert.match(await main(page), /Confirm who you are, including your email address/);
    await page.getByRole('button', { name: 'Allow' }).click();
    await inConsole(page);
    assert.match(await page.locator('header').innerText(), new RegExp(who.email.replace(/\./g, '\\.')));
    const created = await tenantsOf(who.email);
    assert.equal(created.length, 1);

    // Signed out of the console: the button signs in again (the account service remembers browser and consent), same workspace.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL((u) => u.pathname === '/sign-in');
    await page.getByRole('button', { name: 'Sign in with your account' }).click();
    await inConsole(page);
    assert.deepEqual((await tenantsOf(who.email)).map((t) => t.id), [created[0]!.id]);

    // The callback that signed the browser in, opened again: refused, the browser's session untouched.
    const used = callbacks.at(-1)!;
    assert.match(used, /[?&]code=oac_/);
    await page.goto(used);
    assert.equal(await h1(page), 'This sign-in cannot be completed');
    assert.match(await main(page), /already used, or was not started in this browser/);
    for (const line of logs) {
      assert.ok(!line.includes(new URL(used).searchParams.get('code')!), 'the code is never logged');
      assert.ok(!/oat_|ort_/.test(line), 'no token is logged');
    }
  });

  test('a workspace signed up earlier, its address confirmed by the emailed link, and entered by magic link is found for the account with its address, not duplicated', async () => {
    const page = await newPage();
    const who = await newcomer(page);
    const signup = await fetch(`${gwUrl}/api/v1/signup`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Magic Labs', email: who.email }) });
    assert.equal(signup.status, 201);
    const tenantId = ((await signup.json()) as { tenant_id: string }).tenant_id;
    const linkTo = async (path: string) => {
      for (let i = 0; i < 100; i++) {
        const mail = inbox.find((m) => m.to === who.email && m.text.includes(path));
        if (mail) return /https?:\/\/\S+/.exec(mail.text)![0];
        await new Promise((r) => setTimeout(r, 50));
      }
      return assert.fail(`no email with ${path}`);
    };
    // An API sign-up is unconfirmed until its address is confirmed by the emailed link; then sign-ins reach it.
    await page.goto(await linkTo('/auth/confirm-email'));
    await page.getByRole('button', { name: 'I created this workspace: confirm' }).click();
    await page.waitForLoadState();
    assert.equal(await h1(page), 'Address confirmed');
    await page.goto(`${gwUrl}/sign-in`);
    await page.getByLabel('Email address').fill(who.email);
    await page.getByRole('button', { name: 'Email me a sign-in link' }).click();
    await page.waitForURL((u) => u.pathname === '/sign-in');
    await page.goto(await linkTo('/auth/magic-link'));
    await page.getByRole('button', { name: 'Sign in to the console' }).click();
    await inConsole(page);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL((u) => u.pathname === '/sign-in');

    await page.getByRole('button', { name: 'Sign in with your account' }).click();
    await signInAtAccounts(page, who);
    await page.waitForURL((u) => u.pathname === '/oauth/consent');
    await page.getByRole('button', { name: 'Allow' }).click();
    await inConsole(page);
    assert.match(await page.locator('header').innerText(), /Magic Labs/);
    assert.deepEqual((await tenantsOf(who.email)).map((t) => t.id), [tenantId]);
  });

  test('a tampered state is refused, and the sign-in cannot then be finished with the right one', async () => {
    const page = await newPage();
    const who = await newcomer(page);
    // Hold the account service's redirect back to the console (the answer to Allow), to change it as an attacker would.
    let held = '';
    const consent = (u: URL) => u.origin === auth.url && u.pathname === '/oauth/consent';
    await pressAccountButton(page);
    await signInAtAccounts(page, who);
    await page.waitForURL(consent);
    await page.route(consent, async (route) => {
      if (route.request().method() !== 'POST') return route.continue();
      const answer = await route.fetch({ maxRedirects: 0 });
      held = answer.headers()['location'] ?? '';
      await route.fulfill({ status: 200, contentType: 'text/html', body: '<!doctype html><title>held</title><h1>held</h1>' });
    });
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForFunction(() => document.title === 'held');
    await page.unroute(consent);
    assert.ok(held);
    const tampered = new URL(held);
    tampered.searchParams.set('state', 'A'.repeat(43));
    await page.goto(tampered.toString());
    assert.equal(await h1(page), 'This sign-in cannot be completed');
    await page.goto(held);
    assert.equal(await h1(page), 'This sign-in cannot be completed', 'the state was used up by the tampered attempt');
    await page.goto(`${gwUrl}/`);
    assert.equal(new URL(page.url()).pathname, '/sign-in', 'not signed in');
    assert.deepEqual(await tenantsOf(who.email), []);
  });

  test('an account whose address is not verified cannot sign in: the account service says to confirm it; no workspace', async () => {
    const page = await newPage();
    const email = await auth.register(uniqueEmail());
    await pressAccountButton(page);
    await signInAtAccounts(page, { email, password: PASSWORD });
    await page.waitForLoadState();
    assert.equal(await page.getByRole('alert').innerText(), 'Confirm your email address before signing in.');
    assert.equal(new URL(page.url()).origin, auth.url);
    assert.deepEqual(await tenantsOf(email), []);
  });

  test('Deny at the consent page: the console says the sign-in was not allowed', async () => {
    const page = await newPage();
    const who = await newcomer(page);
    await pressAccountButton(page);
    await signInAtAccounts(page, who);
    await page.waitForURL((u) => u.pathname === '/oauth/consent');
    await page.getByRole('button', { name: 'Deny' }).click();
    await page.waitForURL((u) => u.origin === gwUrl);
    assert.equal(await h1(page), 'You did not allow the sign-in');
    assert.deepEqual(await tenantsOf(who.email), []);
  });
});

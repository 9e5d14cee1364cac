import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { Browser, BrowserContextOptions, Locator, Page } from 'playwright-core';
import { escapeHtml } from '../../src/platform/html.ts';
import { PASSWORD, type TestAuth } from '../helpers/auth.ts';
import { chromiumSkip, launchChromium } from '../helpers/chromium.ts';
import { STATIC_CLIENT_ID, STATIC_REDIRECT, startOAuth } from '../helpers/oauth.ts';
import { assertOAuthError, LOOPBACK_CB, RawOAuth, type Who } from '../helpers/oauth-raw.ts';

const IPHONE =
  'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1';

/**
 * The account page as a person uses it: real Chromium, the real service in
 * public mode; the other device is a product's sign-in through the API, the
 * applications got their access through the real OAuth flow (helpers), and
 * a page on another loopback port plays a hostile site.
 */
describe('the account page in Chromium', { skip: chromiumSkip }, () => {
  let auth: TestAuth;
  let raw: RawOAuth;
  let browser: Browser;
  let site: Server | undefined;
  let siteUrl: string;

  function hostileSite(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', siteUrl);
    if (url.pathname !== '/attack') return void res.writeHead(404).end();
    // Auto-submits a sign-out of the victim's other device, with no CSRF token (the attacker cannot read it).
    const session = escapeHtml(url.searchParams.get('session') ?? '');
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Win a prize</title></head><body>` +
        `<form method="post" action="${auth.url}/account/sessions/sign-out"><input type="hidden" name="session" value="${session}"></form>` +
        '<script>document.forms[0].submit()</script></body></html>',
    );
  }

  before(async () => {
    browser = await launchChromium();
    auth = await startOAuth('sqlite', { publicEndpoints: true });
    raw = new RawOAuth(auth);
    site = createServer(hostileSite);
    await new Promise<void>((resolve) => site!.listen(0, '127.0.0.1', resolve));
    siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
  });
  after(async () => {
    await browser?.close();
    site?.closeAllConnections();
    await new Promise<void>((resolve) => (site ? site.close(() => resolve()) : resolve()));
    await auth?.close();
  });

  async function newPage(options: BrowserContextOptions = {}): Promise<Page> {
    const context = await browser.newContext(options);
    context.setDefaultTimeout(10_000);
    return context.newPage();
  }

  /** A product signs the user in on their phone (POST /v1/login with the phone's user agent); returns the session token. */
  async function phoneSignIn(who: Who): Promise<string> {
    const r = await auth.request('POST', '/v1/login', { body: { email: who.email, password: PASSWORD, ip: '203.0.113.9', user_agent: IPHONE } });
    assert.equal(r.status, 200, r.text);
    return r.body.session_token as string;
  }

  /** Opens the account page: the sign-in page first, then back to the account page. */
  async function openAccount(page: Page, who: Who): Promise<void> {
    await page.goto(`${auth.url}/account`);
    assert.equal(new URL(page.url()).pathname, '/oauth/login', 'not signed in: the sign-in page');
    await page.getByLabel('Email').fill(who.email);
    await page.getByLabel('Password').fill(who.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL((u) => u.origin === auth.url && u.pathname === '/account');
    await page.getByRole('heading', { name: 'Your account' }).waitFor();
  }

  const devices = (page: Page) => page.getByRole('list', { name: 'Signed-in devices' }).getByRole('listitem');
  const applications = (page: Page) => page.getByRole('list', { name: 'Applications that can act for you' });
  const texts = (items: Locator) => items.allInnerTexts();

  test('sign in through the login page, see sessions and grants, sign out another device, revoke a grant', async () => {
    const who = await auth.verifiedAccount();
    const phone = await phoneSignIn(who);
    const product = await raw.tokens(who, { clientId: STATIC_CLIENT_ID, redirectUri: STATIC_REDIRECT, scope: 'identity msg:messages:read' });
    const registered = await raw.publicClient([LOOPBACK_CB]);
    const agent = await raw.tokens(who, { clientId: registered, redirectUri: LOOPBACK_CB });

    const page = await newPage();
    await openAccount(page, who);
    assert.ok((await page.locator('main').innerText()).includes(`Signed in as ${who.email}.`));

    // Three sessions: this browser, the phone, and the browser the OAuth helper signed in with.
    const listed = await texts(devices(page));
    assert.equal(listed.length, 3, listed.join('\n---\n'));
    const current = devices(page).filter({ hasText: 'This device' });
    assert.equal(await current.count(), 1, 'exactly one session marked as this device');
    assert.match(await devices(page).first().innerText(), /This device/, "this browser's session comes first");
    assert.match(await current.innerText(), /^Chrome on Linux/);
    const phoneItem = devices(page).filter({ hasText: 'Safari on iPhone' });
    assert.match(await phoneItem.innerText(), /from 203\.0\.113\.9/);
    assert.ok((await phoneItem.innerText()).includes(IPHONE), 'the raw user agent is shown too');

    const apps = await applications(page).innerText();
    assert.match(apps, /product\.example at product\.example/);
    assert.match(apps, /Read your messages \(msg:messages:read\)/);
    assert.match(apps, /Raw test client at 127\.0\.0\.1:7777/);

    // Sign out the phone with its own button (the accessible name says which device).
    await page.getByRole('button', { name: /^Sign out Safari on iPhone, signed in .* from 203\.0\.113\.9$/ }).click();
    await page.waitForURL((u) => u.pathname === '/account' && u.search === '?done=session');
    assert.equal(await page.getByRole('status').innerText(), 'The device is signed out.');
    const refused = await auth.request('GET', '/v1/me', { token: phone });
    assert.equal(refused.status, 401, 'the phone is signed out');
    assert.equal(await devices(page).filter({ hasText: 'Safari on iPhone' }).count(), 0);
    assert.equal(await devices(page).count(), 2);

    // Revoke the product, from the keyboard: focus its button, press Enter.
    const revoke = page.getByRole('button', { name: 'Revoke access of product.example' });
    await revoke.focus();
    await page.keyboard.press('Enter');
    await page.waitForURL((u) => u.pathname === '/account' && u.search === '?done=grant');
    assert.match(await page.getByRole('status').innerText(), /can no longer act for you/);
    assert.ok(!(await applications(page).innerText()).includes('product.example'));
    assertOAuthError(await raw.userinfo(product.access_token), 401, 'invalid_token');
    assertOAuthError(await raw.refresh(STATIC_CLIENT_ID, product.refresh_token), 400, 'invalid_grant');
    assert.equal((await raw.userinfo(agent.access_token)).status, 200, 'the other application keeps its access');

    // Revoke the last one: the page then says no application has access.
    await page.getByRole('button', { name: 'Revoke access of Raw test client' }).click();
    await page.waitForURL((u) => u.search === '?done=grant');
    assert.equal(await applications(page).count(), 0);
    assert.ok((await page.locator('main').innerText()).includes('No application can act for you.'));
  });

  test('a hostile site auto-submitting "sign out" is refused with 403 and signs nothing out', async () => {
    const who = await auth.verifiedAccount();
    const phone = await phoneSignIn(who);
    const phoneId = (await auth.request('GET', '/v1/sessions', { token: phone })).body.sessions.find((s: { current: boolean }) => s.current).id;
    const page = await newPage();
    await openAccount(page, who);

    const [attack] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST' && r.url() === `${auth.url}/account/sessions/sign-out`),
      page.goto(`${siteUrl}/attack?session=${encodeURIComponent(phoneId)}`, { waitUntil: 'commit' }),
    ]);
    assert.equal(attack.status(), 403);
    await page.waitForURL(`${auth.url}/account/sessions/sign-out`);
    assert.match(await page.getByRole('alert').innerText(), /posted from another site/);
    assert.equal((await auth.request('GET', '/v1/me', { token: phone })).status, 200, 'the phone is still signed in');
  });

  test('on a phone the page fits the screen and every button is large enough to tap (screenshot in /tmp)', async () => {
    const who = await auth.verifiedAccount();
    await phoneSignIn(who);
    await raw.tokens(who, { clientId: STATIC_CLIENT_ID, redirectUri: STATIC_REDIRECT, scope: 'identity msg:messages:write work:tasks:write' });
    const page = await newPage({ viewport: { width: 375, height: 667 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 });
    await openAccount(page, who);
    await page.screenshot({ path: '/tmp/account-mobile.png', fullPage: true }); // before the checks: kept even when they fail
    const buttons = page.getByRole('button');
    assert.ok((await buttons.count()) >= 4, 'three sign-outs and a revoke');
    for (const button of await buttons.all()) {
      const box = await button.boundingBox();
      assert.ok(box, 'rendered');
      assert.ok(box.x >= 0 && box.x + box.width <= 375, `fits: x=${box.x} width=${box.width}`);
      assert.ok(box.height >= 24, `tall enough to tap: ${box.height}`);
    }
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(width <= 375, `no horizontal scrolling: the page is ${width}px wide`);
  });
});

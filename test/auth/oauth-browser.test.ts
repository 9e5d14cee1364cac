import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { Browser, BrowserContextOptions, Locator, Page } from 'playwright-core';
import { escapeHtml } from '../../src/platform/html.ts';
import { PASSWORD, type TestAuth } from '../helpers/auth.ts';
import { chromiumSkip, launchChromium } from '../helpers/chromium.ts';
import { startOAuth } from '../helpers/oauth.ts';

const SCOPE = 'identity msg:messages:write';
const IDENTITY_WORDS = 'Confirm who you are, including your email address (identity)';
const WRITE_WORDS = 'Read, send and change your messages (msg:messages:write)';

/**
 * The login and consent pages as a person sees them: real Chromium, the real
 * service in public mode, and a tiny "application" server on another
 * loopback port that receives the redirect at /callback.
 */
describe('OAuth login and consent pages in Chromium', { skip: chromiumSkip }, () => {
  let auth: TestAuth;
  let browser: Browser;
  let app: Server | undefined;
  let appUrl: string;
  let redirectUri: string;
  let clientId: string;
  /** The query of every request the application received at /callback. */
  const callbacks: URLSearchParams[] = [];

  function application(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', appUrl);
    const send = (body: string) =>
      res
        .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
        .end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Application</title></head><body>${body}</body></html>`);
    const q = (name: string) => escapeHtml(url.searchParams.get(name) ?? '');
    if (url.pathname === '/callback') {
      callbacks.push(url.searchParams);
      return void send('<h1>Back in the application</h1>');
    }
    if (url.pathname === '/hello') return void send('<p>Hello from the application</p>');
    if (url.pathname === '/frame') return void send(`<iframe id="victim" src="${q('src')}"></iframe><iframe id="control" src="/hello"></iframe>`);
    if (url.pathname === '/attack') {
      // A cross-site form that tries to approve a request with a guessed CSRF token.
      return void send(
        `<form method="post" action="${auth.url}/oauth/consent"><input type="hidden" name="request" value="${q('request')}">` +
          `<input type="hidden" name="csrf" value="csrf_${'A'.repeat(43)}"><input type="hidden" name="decision" value="approve"></form>` +
          '<script>document.forms[0].submit()</script>',
      );
    }
    res.writeHead(404).end();
  }

  before(async () => {
    browser = await launchChromium();
    auth = await startOAuth('sqlite', { publicEndpoints: true });
    app = createServer(application);
    await new Promise<void>((resolve) => app!.listen(0, '127.0.0.1', resolve));
    appUrl = `http://127.0.0.1:${(app.address() as AddressInfo).port}`;
    redirectUri = `${appUrl}/callback`;
    const registered = await fetch(`${auth.url}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [redirectUri], client_name: 'Browser Test App' }),
    });
    assert.equal(registered.status, 201);
    clientId = ((await registered.json()) as { client_id: string }).client_id;
  });
  after(async () => {
    await browser?.close();
    app?.closeAllConnections();
    await new Promise<void>((resolve) => (app ? app.close(() => resolve()) : resolve()));
    await auth?.close();
  });

  function pkce() {
    const verifier = randomBytes(32).toString('base64url');
    return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
  }

  function authorizeUrl(scope: string, state: string, challenge: string, redirect = redirectUri): string {
    const params = { client_id: clientId, redirect_uri: redirect, response_type: 'code', scope, state, code_challenge: challenge, code_challenge_method: 'S256' };
    return `${auth.url}/oauth/authorize?${new URLSearchParams(params)}`;
  }

  async function newPage(options: BrowserContextOptions = {}): Promise<Page> {
    const context = await browser.newContext(options);
    context.setDefaultTimeout(10_000);
    return context.newPage();
  }

  /** Opens /oauth/authorize in the page as the application would; returns what the application keeps. */
  async function start(page: Page, scope: string) {
    const state = randomBytes(12).toString('base64url');
    const { verifier, challenge } = pkce();
    await page.goto(authorizeUrl(scope, state, challenge));
    return { state, verifier };
  }

  async function signIn(page: Page, who: { email: string; password: string }): Promise<void> {
    await page.getByLabel('Email').fill(who.email);
    await page.getByLabel('Password').fill(who.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
  }

  const path = (page: Page) => {
    const url = new URL(page.url());
    return url.origin === auth.url ? url.pathname : `${url.origin}${url.pathname}`;
  };
  const shown = (what: Locator) => what.innerText();
  const mainText = (page: Page) => shown(page.locator('main'));
  const alertText = (page: Page) => shown(page.getByRole('alert'));
  const pageWidth = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth);
  const scopeList = (page: Page) => page.locator('ul.scopes li').allInnerTexts();

  /** Waits for the consent page; on failure says where the browser is stuck and what the page says. */
  async function atConsent(page: Page): Promise<void> {
    try {
      await page.waitForURL((u) => u.pathname === '/oauth/consent');
    } catch {
      assert.fail(`expected the consent page, still at ${path(page)}: ${JSON.stringify(await mainText(page))}`);
    }
  }

  /** Waits for the browser to land on the application; returns the query the application received. */
  async function atCallback(page: Page): Promise<URLSearchParams> {
    await page.waitForURL((u) => u.origin === appUrl && u.pathname === '/callback');
    const received = callbacks.at(-1)!;
    assert.equal(received.toString(), new URL(page.url()).searchParams.toString());
    return received;
  }

  /** A fresh account signed in through the login page, stopped at the consent page. */
  async function toConsent(page: Page, scope: string) {
    const started = await start(page, scope);
    await signIn(page, await auth.verifiedAccount());
    await atConsent(page);
    return started;
  }

  /** The response to the next form POST to `pathname` on the service. */
  const nextPost = (page: Page, pathname: string) =>
    page.waitForResponse((r) => r.request().method() === 'POST' && r.url() === `${auth.url}${pathname}`);

  test('sign in, then Allow: the application receives a code (with state and iss) that it can exchange', async () => {
    const user = await auth.verifiedAccount();
    const page = await newPage();
    const { state, verifier } = await start(page, SCOPE);
    assert.equal(path(page), '/oauth/login');
    const host = new URL(appUrl).host;
    assert.ok((await mainText(page)).includes(`to continue to Browser Test App at ${host}`));

    await signIn(page, user);
    await atConsent(page);
    const text = await mainText(page);
    assert.ok(text.includes(`Browser Test App at ${host} wants to:`), text);
    assert.deepEqual(await scopeList(page), [IDENTITY_WORDS, WRITE_WORDS]);
    assert.ok(text.includes(`Signed in as ${user.email}. You will be sent back to ${appUrl}.`), text);

    await page.getByRole('button', { name: 'Allow' }).click();
    const query = await atCallback(page);
    const code = query.get('code') ?? '';
    assert.match(code, /^oac_/);
    assert.equal(query.get('state'), state);
    assert.equal(query.get('iss'), auth.url);
    assert.equal(query.get('error'), null);

    const res = await fetch(`${auth.url}/oauth/token`, {
      method: 'POST',
      body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: redirectUri, client_id: clientId, code_verifier: verifier }),
    });
    const tokens = (await res.json()) as { access_token?: string; scope?: string };
    assert.equal(res.status, 200, JSON.stringify(tokens));
    assert.match(tokens.access_token ?? '', /^oat_/);
    assert.equal(tokens.scope, SCOPE);
  });

  test('Deny sends the browser back with error=access_denied, the state and iss, and no code', async () => {
    const page = await newPage();
    const { state } = await toConsent(page, SCOPE);
    await page.getByRole('button', { name: 'Deny' }).click();
    const query = await atCallback(page);
    assert.equal(query.get('error'), 'access_denied');
    assert.equal(query.get('state'), state);
    assert.equal(query.get('iss'), auth.url);
    assert.equal(query.get('code'), null);
  });

  test('a loopback client never skips the consent page on remembered consent (RFC 8252 section 8.6), but keeps the sign-in', async () => {
    const page = await newPage();
    await toConsent(page, SCOPE);
    await page.getByRole('button', { name: 'Allow' }).click();
    await atCallback(page);

    // Any local program could have started this request with its own port and PKCE pair: the user is asked again.
    for (const scope of [SCOPE, 'msg:messages:read']) {
      await start(page, scope);
      assert.equal(path(page), '/oauth/consent', `the consent page again for ${scope}, no sign-in`);
    }
    await page.getByRole('button', { name: 'Allow' }).click();
    assert.match((await atCallback(page)).get('code') ?? '', /^oac_/);
  });

  test('"Not you?" on the consent page signs out and returns to sign-in for the same request', async () => {
    const page = await newPage();
    const first = await auth.verifiedAccount();
    await start(page, 'identity');
    await signIn(page, first);
    await atConsent(page);
    assert.match(await mainText(page), new RegExp(`Not ${first.email.replaceAll('.', '\\.')}\\? Sign out`));

    const [signedOut] = await Promise.all([nextPost(page, '/oauth/logout'), page.getByRole('button', { name: 'Sign out' }).click()]);
    assert.equal(signedOut.status(), 303);
    await page.waitForURL((u) => u.pathname === '/oauth/login');
    const other = await auth.verifiedAccount();
    await signIn(page, other);
    await atConsent(page);
    assert.ok((await mainText(page)).includes(`Signed in as ${other.email}.`));
    await page.getByRole('button', { name: 'Allow' }).click();
    assert.match((await atCallback(page)).get('code') ?? '', /^oac_/);
  });

  test('a wrong password shows an alert and the page still works; an unverified account is told to confirm', async () => {
    const user = await auth.verifiedAccount();
    const page = await newPage();
    await start(page, 'identity');
    const [wrong] = await Promise.all([nextPost(page, '/oauth/login'), signIn(page, { email: user.email, password: 'not the password' })]);
    assert.equal(wrong.status(), 401);
    assert.equal(await alertText(page), 'The email address or password is wrong.');
    assert.equal(await page.getByLabel('Email').inputValue(), user.email, 'the email is kept');
    assert.equal(await page.getByLabel('Password').inputValue(), '', 'the password is not echoed back');
    await signIn(page, user);
    await atConsent(page);

    const unverified = await newPage();
    await start(unverified, 'identity');
    const [refused] = await Promise.all([nextPost(unverified, '/oauth/login'), signIn(unverified, { email: await auth.register(), password: PASSWORD })]);
    assert.equal(refused.status(), 403);
    assert.equal(await alertText(unverified), 'Confirm your email address before signing in.');
  });

  test('the session and CSRF cookies are HttpOnly and SameSite=Lax (Secure only in production)', async () => {
    const page = await newPage();
    await toConsent(page, 'identity');
    const cookies = await page.context().cookies(auth.url);
    for (const name of ['auth_session', 'auth_csrf']) {
      const c = cookies.find((x) => x.name === name);
      assert.ok(c, `${name} is set (names: ${cookies.map((x) => x.name).join(', ')})`);
      assert.equal(c.httpOnly, true, name);
      assert.equal(c.sameSite, 'Lax', name);
      assert.equal(c.path, '/', name);
      assert.equal(c.secure, false, `${name}: not Secure in development (production sets Secure and the __Host- prefix)`);
    }
    assert.ok(cookies.find((x) => x.name === 'auth_session')!.expires > Date.now() / 1000, 'the session cookie is persistent, with an expiry');
  });

  test('the login page cannot be framed by another site', async () => {
    const page = await newPage();
    await start(page, 'identity');
    const loginUrl = page.url();
    const framed = page.waitForResponse((r) => r.url() === loginUrl);
    await page.goto(`${appUrl}/frame?src=${encodeURIComponent(loginUrl)}`);
    const response = await framed;
    assert.equal(response.status(), 200, 'the browser did fetch the page for the frame');
    assert.match(response.headers()['content-security-policy'] ?? '', /frame-ancestors 'none'/);
    await page.locator('#control').contentFrame().getByText('Hello from the application').waitFor();
    const victim = page.locator('#victim').contentFrame();
    assert.equal(await victim.locator('input').count(), 0, 'no login form rendered inside the frame');
    assert.equal(await victim.getByText('Sign in').count(), 0);
  });

  test('CSRF: a cross-site auto-submitted approval and a tampered token are refused with 403, never a code', async () => {
    const page = await newPage();
    await toConsent(page, 'identity');
    const before = callbacks.length;

    // The attacker starts their own authorization request, then makes the signed-in victim post the approval.
    const started = await fetch(authorizeUrl(SCOPE, 'attacker', pkce().challenge), { redirect: 'manual' });
    const attackRequest = new URL(started.headers.get('location')!).searchParams.get('request')!;
    const [attack] = await Promise.all([
      nextPost(page, '/oauth/consent'),
      page.goto(`${appUrl}/attack?request=${encodeURIComponent(attackRequest)}`, { waitUntil: 'commit' }),
    ]);
    await page.waitForURL(`${auth.url}/oauth/consent`);
    assert.equal(attack.status(), 403);
    assert.match(await alertText(page), /posted from another site/);

    // On our own page, a wrong token in the form is refused too.
    await start(page, 'identity');
    assert.equal(path(page), '/oauth/consent');
    await page.locator('form[action$="/oauth/consent"] input[name=csrf]').evaluate((el) => {
      (el as HTMLInputElement).value = `csrf_${'B'.repeat(43)}`;
    });
    const [tampered] = await Promise.all([nextPost(page, '/oauth/consent'), page.getByRole('button', { name: 'Allow' }).click()]);
    assert.equal(tampered.status(), 403);
    assert.match(await alertText(page), /did not come from this site/);
    assert.equal(callbacks.length, before, 'the application received nothing');
  });

  test('an unregistered redirect_uri shows an error page and never redirects', async () => {
    for (const redirect of ['https://evil.example/callback', `${appUrl}/elsewhere`]) {
      const page = await newPage();
      const leftService: string[] = [];
      page.on('request', (r) => {
        if (new URL(r.url()).origin !== auth.url) leftService.push(r.url());
      });
      const response = await page.goto(authorizeUrl('identity', 'st', pkce().challenge, redirect));
      assert.equal(response?.status(), 400, redirect);
      assert.equal(new URL(page.url()).origin, auth.url);
      assert.equal(await alertText(page), 'The redirect_uri is not registered for this application.');
      assert.deepEqual(leftService, [], `the browser never left the service for ${redirect}`);
    }
  });

  test('on a phone the login and consent pages fit the screen (screenshots in /tmp)', async () => {
    const page = await newPage({ viewport: { width: 375, height: 667 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 });
    await start(page, SCOPE);
    await page.screenshot({ path: '/tmp/oauth-login-mobile.png', fullPage: true }); // before the checks: kept even when they fail
    const fits = async (what: Locator, name: string) => {
      const box = await what.boundingBox();
      assert.ok(box, `${name} is rendered`);
      assert.ok(box.x >= 0 && box.x + box.width <= 375, `${name} fits: x=${box.x} width=${box.width}`);
      assert.ok(box.height >= 24, `${name} is tall enough to tap: ${box.height}`);
    };
    await fits(page.locator('main'), 'the card');
    await fits(page.getByLabel('Email'), 'email input');
    await fits(page.getByLabel('Password'), 'password input');
    await fits(page.getByRole('button', { name: 'Sign in' }), 'sign-in button');
    assert.ok((await pageWidth(page)) <= 375, `no horizontal scrolling: the page is ${await pageWidth(page)}px wide`);

    await signIn(page, await auth.verifiedAccount());
    await atConsent(page);
    await page.screenshot({ path: '/tmp/oauth-consent.png', fullPage: true });
    await fits(page.locator('main'), 'the card');
    await fits(page.getByRole('button', { name: 'Allow' }), 'Allow button');
    await fits(page.getByRole('button', { name: 'Deny' }), 'Deny button');
    assert.ok((await pageWidth(page)) <= 375, `no horizontal scrolling: the page is ${await pageWidth(page)}px wide`);
  });
});

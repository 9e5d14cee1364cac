import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { startTestAuth, type TestAuth } from '../helpers/auth.ts';
import { chromiumSkip, launchChromium } from '../helpers/chromium.ts';
import { mailsTo, RESET_SUBJECT, resetToken } from '../helpers/recovery.ts';

const NEW_PASSWORD = 'a brand new passphrase 42';
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

describe('the built-in password reset page (AUTH_RESET_URL unset)', () => {
  let auth: TestAuth;
  before(async () => {
    auth = await startTestAuth('sqlite', { AUTH_LIMIT_FORGOT_PER_EMAIL: '100/3600', AUTH_LIMIT_FORGOT: '1000/3600' });
  });
  after(() => auth.close());

  const post = (fields: Record<string, string> | string) =>
    auth.request('POST', '/reset-password', {
      key: false,
      rawBody: typeof fields === 'string' ? fields : new URLSearchParams(fields).toString(),
      headers: FORM,
    });
  const loginStatus = async (email: string, password: string) =>
    (await auth.request('POST', '/v1/login', { body: { email, password, ip: '198.51.100.9' } })).status;

  test('the emailed link opens a form; GET never consumes the token; the POST sets the password once', async () => {
    const { email } = await auth.verifiedAccount();
    const token = await resetToken(auth, email);
    const [mail] = await mailsTo(auth, email, RESET_SUBJECT);
    const link = /https?:\/\/\S+/.exec(mail!.text)![0];
    assert.equal(link, `${auth.url}/reset-password?token=${token}`);

    for (let i = 0; i < 2; i++) {
      const page = await auth.request('GET', `/reset-password?token=${token}`, { key: false });
      assert.equal(page.status, 200);
      assert.match(page.headers.get('content-type')!, /text\/html/);
      assert.match(page.headers.get('content-security-policy')!, /frame-ancestors 'none'/);
      assert.equal(page.headers.get('referrer-policy'), 'same-origin', 'the token in the URL never leaves the origin');
      assert.equal(page.headers.get('cache-control'), 'no-store');
      assert.match(page.text, new RegExp(`name="token" value="${token}"`));
      assert.match(page.text, /type="password" id="password" name="password" autocomplete="new-password"/);
    }

    const differ = await post({ token, password: NEW_PASSWORD, confirm: `${NEW_PASSWORD}!` });
    assert.equal(differ.status, 400);
    assert.match(differ.text, /The two passwords differ/);
    const short = await post({ token, password: 'short', confirm: 'short' });
    assert.equal(short.status, 400);
    assert.match(short.text, /at least 12 characters/);
    assert.match(short.text, new RegExp(`name="token" value="${token}"`), 'the form again, the link still usable');

    const done = await post({ token, password: NEW_PASSWORD, confirm: NEW_PASSWORD });
    assert.equal(done.status, 200);
    assert.match(done.text, /Password changed/);
    assert.ok(done.text.includes(email));
    assert.equal(await loginStatus(email, NEW_PASSWORD), 200);

    const again = await post({ token, password: 'another passphrase 43', confirm: 'another passphrase 43' });
    assert.equal(again.status, 409);
    assert.match(again.text, /already been used/);
  });

  test('markup in the token is escaped', async () => {
    const evil = '"><script>alert(1)</script>';
    const page = await auth.request('GET', `/reset-password?token=${encodeURIComponent(evil)}`, { key: false });
    assert.equal(page.status, 200);
    assert.ok(!page.text.includes('<script>'));
    assert.match(page.text, /&quot;&gt;&lt;script&gt;/);
    const posted = await post({ token: evil, password: 'x', confirm: 'y' });
    assert.equal(posted.status, 400);
    assert.ok(!posted.text.includes('<script>'));
  });

  test('bounded input: unknown, over-long or repeated fields and large bodies are HTML errors, never JSON or a 500', async () => {
    const unknown = await post({ token: `prt_${'A'.repeat(43)}`, password: NEW_PASSWORD, confirm: NEW_PASSWORD });
    assert.equal(unknown.status, 400);
    assert.match(unknown.text, /This link cannot be used/);

    const cases: [string, number][] = [
      [new URLSearchParams({ token: 'x'.repeat(300), password: NEW_PASSWORD, confirm: NEW_PASSWORD }).toString(), 400],
      [`token=a&token=b&password=${encodeURIComponent(NEW_PASSWORD)}&confirm=${encodeURIComponent(NEW_PASSWORD)}`, 400],
      [new URLSearchParams({ token: 'a', password: 'p'.repeat(600), confirm: 'p'.repeat(600) }).toString(), 400],
      ['', 400],
      [`token=a&pad=${'x'.repeat(20_000)}`, 413],
    ];
    for (const [body, status] of cases) {
      const r = await post(body);
      assert.equal(r.status, status, body.slice(0, 60));
      assert.match(r.headers.get('content-type')!, /text\/html/);
      assert.match(r.headers.get('content-security-policy')!, /default-src 'none'/);
    }
    const longQuery = await auth.request('GET', `/reset-password?token=${'x'.repeat(300)}`, { key: false });
    assert.equal(longQuery.status, 400);
    assert.match(longQuery.headers.get('content-type')!, /text\/html/);
  });

  describe('in Chromium', { skip: chromiumSkip }, () => {
    let browser: Browser;
    before(async () => {
      browser = await launchChromium();
    });
    after(() => browser?.close());

    test('a person opens the link, types the new password twice and can sign in with it', async () => {
      const { email } = await auth.verifiedAccount();
      const token = await resetToken(auth, email);
      const page = await browser.newPage();
      await page.goto(`${auth.url}/reset-password?token=${token}`);
      assert.equal(await page.title(), 'Reset password');
      await page.getByLabel('New password', { exact: true }).fill(NEW_PASSWORD);
      await page.getByLabel('New password again').fill(NEW_PASSWORD);
      await Promise.all([page.waitForURL(`${auth.url}/reset-password`), page.getByRole('button', { name: 'Set the new password' }).click()]);
      assert.equal(await page.getByRole('heading').textContent(), 'Password changed');
      assert.equal(await loginStatus(email, NEW_PASSWORD), 200);
      await page.close();
    });
  });
});

describe('with AUTH_RESET_URL set', () => {
  let auth: TestAuth;
  before(async () => {
    auth = await startTestAuth('sqlite', { AUTH_RESET_URL: 'https://app.example/reset?t={token}' });
  });
  after(() => auth.close());

  test('the link is the product page with the token, and the built-in page is not served', async () => {
    const { email } = await auth.verifiedAccount();
    await auth.request('POST', '/v1/password/forgot', { body: { email, ip: '198.51.100.5' } });
    const [mail] = await mailsTo(auth, email, RESET_SUBJECT);
    assert.match(mail!.text, /https:\/\/app\.example\/reset\?t=prt_[A-Za-z0-9_-]{43}/);
    assert.equal((await auth.request('GET', '/reset-password?token=x', { key: false })).status, 404);
  });
});

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestAuth, type TestAuth, tokenFromMail } from '../helpers/auth.ts';

describe('the built-in verification page (AUTH_VERIFY_URL unset)', () => {
  let auth: TestAuth;
  before(async () => {
    auth = await startTestAuth('sqlite', { AUTH_BASE_URL: 'https://accounts.example' });
  });
  after(() => auth.close());

  test('the emailed link points at the page; GET shows a form without consuming the token; POST verifies', async () => {
    const email = await auth.register();
    const mail = await auth.verificationMail(email);
    const link = /https?:\/\/\S+/.exec(mail.text)![0];
    assert.ok(link.startsWith('https://accounts.example/verify?token=vt_'));
    const token = tokenFromMail(mail);

    const page = await auth.request('GET', `/verify?token=${token}`, { key: false });
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type')!, /text\/html/);
    assert.match(page.headers.get('content-security-policy')!, /frame-ancestors 'none'/);
    assert.equal(page.headers.get('referrer-policy'), 'same-origin', 'the token in the URL never leaves the origin');
    assert.match(page.text, new RegExp(`name="token" value="${token}"`));

    const form = new URLSearchParams({ token }).toString();
    const done = await auth.request('POST', '/verify', {
      key: false,
      rawBody: form,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    assert.equal(done.status, 200);
    assert.match(done.text, /Email confirmed/);
    assert.match(done.text, new RegExp(email.replace('.', '\\.')));

    const again = await auth.request('POST', '/verify', {
      key: false,
      rawBody: form,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    assert.equal(again.status, 409);
    assert.match(again.text, /already been used/);
  });

  test('markup in the token is escaped', async () => {
    const page = await auth.request('GET', `/verify?token=${encodeURIComponent('"><script>alert(1)</script>')}`, { key: false });
    assert.equal(page.status, 200);
    assert.ok(!page.text.includes('<script>'));
    assert.match(page.text, /&quot;&gt;&lt;script&gt;/);
  });
});

describe('with AUTH_VERIFY_URL set', () => {
  let auth: TestAuth;
  before(async () => {
    auth = await startTestAuth('sqlite', { AUTH_VERIFY_URL: 'https://app.example/confirm?t={token}' });
  });
  after(() => auth.close());

  test('the link is the product page with the token, and the built-in page is not served', async () => {
    const email = await auth.register();
    const mail = await auth.verificationMail(email);
    assert.match(mail.text, /https:\/\/app\.example\/confirm\?t=vt_[A-Za-z0-9_-]{43}/);
    assert.equal((await auth.request('GET', '/verify?token=x', { key: false })).status, 404);
  });
});

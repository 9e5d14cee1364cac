import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { PASSWORD, type TestAuth, tokenFromMail, uniqueEmail } from '../helpers/auth.ts';
import { DB_KINDS } from '../helpers/env.ts';
import { Browser, edgeFetch, STATIC_CLIENT_ID, STATIC_REDIRECT, startOAuth } from '../helpers/oauth.ts';
import { firstLink } from '../helpers/smtp.ts';

const NEW_PASSWORD = 'a brand new passphrase 42';
const decode = (html: string) => html.replaceAll('&amp;', '&');
/** The href of the link with this text. */
function link(html: string, text: string): string {
  const m = new RegExp(`<a href="([^"]+)">${text}</a>`).exec(html);
  assert.ok(m, `a link "${text}"`);
  return decode(m[1]!);
}

for (const kind of DB_KINDS) {
  describe(`the sign-up page, HTTP level (${kind})`, () => {
    let auth: TestAuth;
    before(async () => {
      auth = await startOAuth(kind);
    });
    after(() => auth.close());

    const users = (email: string) => auth.service.deps.db.selectFrom('users').selectAll().where('email', '=', email).execute();

    /** A browser at the sign-in page of a fresh authorization request of the static client. */
    async function atSignIn(): Promise<{ browser: Browser; requestId: string; html: string }> {
      const browser = new Browser(false);
      const query = new URLSearchParams({ client_id: STATIC_CLIENT_ID, redirect_uri: STATIC_REDIRECT, response_type: 'code', scope: 'identity', state: 's1' });
      const start = await browser.request(`${auth.url}/oauth/authorize?${query}`);
      assert.equal(start.status, 302);
      const requestId = new URL(start.location!).searchParams.get('request')!;
      const page = await browser.request(start.location!);
      assert.equal(page.status, 200);
      return { browser, requestId, html: page.text };
    }

    /** Follows the sign-in page's "Create an account"; returns the form's fields and a function posting it. */
    async function atSignUp(from?: { browser: Browser; html: string }) {
      const at = from ?? (await atSignIn());
      const url = link(at.html, 'Create an account');
      const page = await at.browser.request(url);
      assert.equal(page.status, 200, page.text);
      const fields = Browser.fields(page.text);
      const post = (form: Record<string, string>, headers?: Record<string, string>) =>
        at.browser.request(`${auth.url}/oauth/signup`, { form: { ...fields, ...form }, headers });
      return { browser: at.browser, url, page, fields, post };
    }

    test('the sign-in page links to the sign-up page for the same request, which links back; headers as the sign-in page', async () => {
      const at = await atSignIn();
      const { url, page, fields } = await atSignUp(at);
      assert.equal(url, `${auth.url}/oauth/signup?request=${at.requestId}`);
      assert.deepEqual(Object.keys(fields).sort(), ['csrf', 'request']);
      assert.equal(fields['request'], at.requestId);
      assert.equal(fields['csrf'], at.browser.cookies.get('auth_csrf'), 'the CSRF token of the sign-in page');
      assert.match(page.text, /<h1>Create an account<\/h1>/);
      assert.match(page.text, /to continue to <strong>product\.example<\/strong>/);
      assert.equal(link(page.text, 'Sign in'), `${auth.url}/oauth/login?request=${at.requestId}`);
      assert.equal(page.headers.get('cache-control'), 'no-store');
      assert.match(page.headers.get('content-security-policy') ?? '', /default-src 'none'.*form-action 'self';.*frame-ancestors 'none'/);
      assert.equal(page.headers.get('x-frame-options'), 'DENY');
      assert.equal(page.headers.get('referrer-policy'), 'same-origin');
      for (const id of ['email', 'password', 'confirm']) assert.match(page.text, new RegExp(`<label for="${id}">`), `${id} is labelled`);
      assert.match(page.text, /autocomplete="new-password"/);
    });

    test('a new address: the account is created unverified, its verification email queued; "Check your email"; the link confirms it and continues to sign-in for the same request', async () => {
      const email = uniqueEmail();
      const form = await atSignUp();
      await auth.service.mailWorker.stop(); // nothing sends it yet: the outbox must hold it when the page answers
      let posted: Awaited<ReturnType<typeof form.post>>;
      try {
        posted = await form.post({ email: `  ${email.toUpperCase()} `, password: NEW_PASSWORD, confirm: NEW_PASSWORD });
        assert.equal(posted.status, 303, posted.text);
        assert.equal(posted.location, `${auth.url}/oauth/signup/sent`);
        const [user] = await users(email);
        assert.ok(user, 'the account exists, its address normalised');
        assert.equal(user.email_verified_at, null);
        const outbox = await auth.service.deps.db.selectFrom('outbox').selectAll().where('recipient', '=', email).execute();
        assert.deepEqual(outbox.map((r) => r.kind), ['verify_email']);
      } finally {
        auth.service.mailWorker.start();
      }
      const cookie = posted.headers.getSetCookie().find((c) => c.startsWith('auth_signup='));
      assert.ok(cookie, 'the continuation cookie');
      assert.match(cookie, /HttpOnly/i);
      assert.match(cookie, /SameSite=Lax/i);
      assert.match(cookie, /Path=\//);

      const sent = await form.browser.request(posted.location!);
      assert.equal(sent.status, 200);
      assert.match(sent.text, /<h1>Check your email<\/h1>/);
      assert.ok(sent.text.includes(`We sent an email to <strong class="wrap">${email}</strong>`));
      assert.match(sent.text, /expires in 24 hours/);
      assert.equal(link(sent.text, 'Start again'), form.url);

      // The password is the one typed: signing in through the API is refused only because the address is unconfirmed.
      const early = await auth.request('POST', '/v1/login', { body: { email, password: NEW_PASSWORD, ip: '198.51.100.7' } });
      assert.equal(early.body.code, 'email_not_verified');

      const mail = await auth.verificationMail(email);
      const verify = await form.browser.request(firstLink(mail));
      assert.equal(verify.status, 200);
      const confirmed = await form.browser.request(`${auth.url}/verify`, { form: { token: tokenFromMail(mail) } });
      assert.equal(confirmed.status, 200);
      assert.match(confirmed.text, /Email confirmed/);
      assert.match(confirmed.text, /<form method="get" action="[^"]+\/oauth\/signup\/continue">/);
      assert.equal(form.browser.cookies.get('auth_session'), undefined, 'the link signs nobody in');

      const next = await form.browser.request(`${auth.url}/oauth/signup/continue`);
      assert.equal(next.status, 303);
      assert.equal(next.location, `${auth.url}/oauth/login?request=${form.fields['request']}`);
      assert.equal(form.browser.cookies.get('auth_signup'), '', 'used once: cleared');
      const login = await form.browser.request(next.location!);
      const signedIn = await form.browser.request(`${auth.url}/oauth/login`, {
        form: { ...Browser.fields(login.text), email, password: NEW_PASSWORD },
      });
      assert.equal(signedIn.status, 303, signedIn.text);
      assert.equal(new URL(signedIn.location!).pathname, '/oauth/consent', 'the same authorization request goes on');
    });

    test('an address that has an account (verified or not): the same answers, no second account, and its owner is emailed a reset link instead', async () => {
      const verified = await auth.verifiedAccount();
      const unverified = await auth.register();
      const fresh = uniqueEmail();
      const answers: { status: number; location: string | null; cookie: string; sent: string }[] = [];
      for (const email of [fresh, verified.email, unverified]) {
        const form = await atSignUp();
        const posted = await form.post({ email, password: NEW_PASSWORD, confirm: NEW_PASSWORD });
        const cookie = posted.headers.getSetCookie().find((c) => c.startsWith('auth_signup=')) ?? '';
        const sent = await form.browser.request(posted.location ?? `${auth.url}/nowhere`);
        answers.push({
          status: posted.status,
          location: posted.location,
          // The cookie's value names the address; its attributes must match.
          cookie: cookie.slice(cookie.indexOf(';')),
          // Each browser has its own authorization request.
          sent: `${sent.status} ${sent.text.replaceAll(email, '{email}').replaceAll(form.fields['request']!, '{request}')}`,
        });
      }
      assert.equal(answers[0]!.status, 303);
      assert.deepEqual(answers[1], answers[0], 'a verified account: the same answer as a new address');
      assert.deepEqual(answers[2], answers[0], 'an unverified account: the same answer as a new address');

      for (const email of [verified.email, unverified]) {
        assert.equal((await users(email)).length, 1);
        const note = await auth.smtp.waitFor((m) => m.to.includes(email) && m.subject === 'You already have an account');
        assert.match(note.text, /tried to create an account with this address, but it already has one/);
        const reset = new URL(firstLink(note));
        assert.equal(reset.pathname, '/reset-password');
        assert.match(reset.searchParams.get('token') ?? '', /^prt_/);
        const confirms = auth.smtp.received.filter((m) => m.to.includes(email) && m.subject.includes('Confirm'));
        assert.equal(confirms.length, 1, 'no verification email for the attempt (only the one of the original sign-up)');
      }
      // The existing password is untouched: the attempt changed nothing.
      assert.equal((await auth.request('POST', '/v1/login', { body: { email: verified.email, password: PASSWORD, ip: '198.51.100.7' } })).status, 200);
      const attempt = await auth.request('POST', '/v1/login', { body: { email: verified.email, password: NEW_PASSWORD, ip: '198.51.100.7' } });
      assert.equal(attempt.status, 401);
    });

    test('field errors: 400, each next to its field and listed in an alert, the address kept (escaped), no password echoed, no account', async () => {
      const form = await atSignUp();
      const bad = '"><script>alert(1)</script>@x';
      const r = await form.post({ email: bad, password: 'short', confirm: 'short' });
      assert.equal(r.status, 400);
      assert.match(r.text, /<div class="error" role="alert"><p>The account was not created:<\/p><ul><li><a href="#email">The email address is not valid\.<\/a><\/li><li><a href="#password">The password must be at least 12 characters\.<\/a><\/li><\/ul><\/div>/);
      assert.match(r.text, /<input id="email" name="email" [^>]*value="&quot;&gt;&lt;script&gt;alert\(1\)&lt;\/script&gt;@x" aria-invalid="true" aria-describedby="email-hint email-error" required>/);
      assert.match(r.text, /<p class="error" id="email-error"><span class="sr-only">Error: <\/span>The email address is not valid\.<\/p>/);
      assert.match(r.text, /<input id="password" [^>]*aria-invalid="true" aria-describedby="password-hint password-error" required>/);
      assert.ok(!r.text.includes('<script>'));
      assert.ok(!r.text.includes('short'), 'the password is never echoed');
      assert.equal(Browser.fields(r.text)['request'], form.fields['request'], 'the request is kept');

      const differ = await form.post({ email: uniqueEmail(), password: NEW_PASSWORD, confirm: `${NEW_PASSWORD}!` });
      assert.equal(differ.status, 400);
      assert.match(differ.text, /<p class="error" id="confirm-error"><span class="sr-only">Error: <\/span>The two passwords differ; type the same password twice\.<\/p>/);
      assert.ok(!differ.text.includes('id="email-error"'));

      const empty = await form.post({});
      assert.equal(empty.status, 400);
      assert.match(empty.text, /Enter your email address\./);
      assert.match(empty.text, /Choose a password\./);

      const long = await form.post({ email: `${'a'.repeat(2000)}@example.com`, password: 'p'.repeat(600), confirm: 'p'.repeat(600) });
      assert.equal(long.status, 400);
      assert.match(long.text, /The email address is not valid\./);
      assert.match(long.text, /The password must be at most 256 characters\./);
      assert.ok(long.text.length < 10_000, 'an over-long address is not echoed whole');

      const huge = await form.post({ email: 'x@example.com', password: 'p'.repeat(30_000) });
      assert.equal(huge.status, 413);
      assert.match(huge.headers.get('content-type') ?? '', /^text\/html/);

      const alone = await form.post({ email: 'a@example.com' });
      assert.equal(alone.status, 400, 'an address alone: the password is missing');
      const repeated = await fetch(`${auth.url}/oauth/signup`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `auth_csrf=${form.fields['csrf']}` },
        body: `${new URLSearchParams(form.fields)}&email=a@example.com&email=b@example.com`,
        redirect: 'manual',
      });
      assert.equal(repeated.status, 400);
      assert.match(await repeated.text(), /must be given once/);
      assert.equal((await users('a@example.com')).length, 0);
    });

    test('CSRF: no token, a wrong one, or another origin: a 403 page and no account', async () => {
      const form = await atSignUp();
      const email = uniqueEmail();
      const fill = { email, password: NEW_PASSWORD, confirm: NEW_PASSWORD };
      for (const attempt of [
        { form: { ...fill, csrf: '' } },
        { form: { ...fill, csrf: `csrf_${'A'.repeat(43)}` } },
        { form: fill, headers: { origin: 'https://evil.example' } },
      ]) {
        const r = await form.post(attempt.form, attempt.headers);
        assert.equal(r.status, 403);
        assert.match(r.text, /This request cannot continue/);
      }
      assert.equal((await users(email)).length, 0);
      assert.equal((await form.post(fill)).status, 303, 'the real form still works');
    });

    test('targets: on its own the page leads to the account page; an expired or foreign target is refused', async () => {
      const browser = new Browser(false);
      const alone = await browser.request(`${auth.url}/oauth/signup`);
      assert.equal(alone.status, 200);
      assert.equal(Browser.fields(alone.text)['return_to'], '/account');
      assert.equal(link(alone.text, 'Sign in'), `${auth.url}/oauth/login?return_to=%2Faccount`);
      for (const query of ['return_to=https://evil.example/', 'return_to=//evil.example', 'request=00000000-0000-4000-8000-000000000000']) {
        const r = await browser.request(`${auth.url}/oauth/signup?${query}`);
        assert.equal(r.status, 400, query);
        assert.match(r.text, /expired or is unknown/);
        assert.ok(!r.text.includes('<form'), 'no form');
      }
      // Posted on its own, verified in this browser: "Continue" leads to the sign-in page for the account page.
      const email = uniqueEmail();
      const posted = await browser.request(`${auth.url}/oauth/signup`, {
        form: { ...Browser.fields(alone.text), email, password: NEW_PASSWORD, confirm: NEW_PASSWORD },
      });
      assert.equal(posted.status, 303);
      await browser.request(`${auth.url}/verify`, { form: { token: tokenFromMail(await auth.verificationMail(email)) } });
      const next = await browser.request(`${auth.url}/oauth/signup/continue`);
      assert.equal(next.location, `${auth.url}/oauth/login?return_to=%2Faccount`);
    });

    test('Continue after the authorization request expired, or in another browser: "Sign in again", no redirect', async () => {
      const form = await atSignUp();
      const email = uniqueEmail();
      assert.equal((await form.post({ email, password: NEW_PASSWORD, confirm: NEW_PASSWORD })).status, 303);
      const token = tokenFromMail(await auth.verificationMail(email));

      const other = new Browser(false);
      const elsewhere = await other.request(`${auth.url}/verify`, { form: { token } });
      assert.equal(elsewhere.status, 200);
      assert.match(elsewhere.text, /You can close this page and sign in\./);
      assert.ok(!elsewhere.text.includes('/oauth/signup/continue'), 'no Continue without the cookie');
      const nothing = await other.request(`${auth.url}/oauth/signup/continue`);
      assert.equal(nothing.status, 200);
      assert.match(nothing.text, /<h1>Sign in again<\/h1>/);

      auth.clock.advance(11 * 60_000); // past the pending request's 10 minutes
      const late = await form.browser.request(`${auth.url}/oauth/signup/continue`);
      assert.equal(late.status, 200);
      assert.match(late.text, /The sign-in you started has expired/);
      assert.equal(link(late.text, 'sign in to your account'), `${auth.url}/oauth/login?return_to=%2Faccount`);
    });
  });
}

describe('the sign-up page shares the per-IP sign-up limit of POST /v1/register', () => {
  let auth: TestAuth;
  before(async () => {
    auth = await startOAuth('sqlite', { env: { AUTH_LIMIT_REGISTER: '2/3600' } });
  });
  after(() => auth.close());

  test('one sign-up through the API and one through the page from 127.0.0.1, then the page answers 429 with Retry-After', async () => {
    await auth.register(uniqueEmail(), '127.0.0.1');
    const browser = new Browser(false);
    const page = await browser.request(`${auth.url}/oauth/signup`);
    const fields = Browser.fields(page.text);
    const post = (email: string) => browser.request(`${auth.url}/oauth/signup`, { form: { ...fields, email, password: NEW_PASSWORD, confirm: NEW_PASSWORD } });
    assert.equal((await post(uniqueEmail())).status, 303);
    const email = uniqueEmail();
    const limited = await post(email);
    assert.equal(limited.status, 429);
    assert.match(limited.headers.get('retry-after') ?? '', /^\d+$/);
    assert.match(limited.text, /<p class="error" role="alert">Too many sign-ups from this IP address; try again later\.<\/p>/);
    assert.ok(limited.text.includes(`value="${email}"`), 'the address is kept for later');
    assert.equal((await auth.service.deps.db.selectFrom('users').select('id').where('email', '=', email).execute()).length, 0);
  });
});

describe('without OAUTH_PUBLIC_ENDPOINTS there is no sign-up page', () => {
  let auth: TestAuth;
  before(async () => {
    auth = await startOAuth('sqlite', { publicEndpoints: false });
  });
  after(() => auth.close());

  test('the paths are unknown even with the edge key, and the sign-in page has no "Create an account"', async () => {
    for (const path of ['/oauth/signup', '/oauth/signup/sent', '/oauth/signup/continue']) {
      assert.equal((await auth.request('GET', path)).status, 404, path);
      assert.notEqual((await auth.request('GET', path, { key: false })).status, 200, path);
    }
    assert.equal((await auth.request('POST', '/oauth/signup', { rawBody: 'email=a%40example.com', headers: { 'content-type': 'application/x-www-form-urlencoded' } })).status, 404);
    const query = new URLSearchParams({ client_id: STATIC_CLIENT_ID, redirect_uri: STATIC_REDIRECT, response_type: 'code', scope: 'identity' });
    const start = await edgeFetch(`${auth.url}/oauth/authorize?${query}`, { redirect: 'manual' });
    const login = await edgeFetch(start.headers.get('location')!);
    assert.equal(login.status, 200);
    const html = await login.text();
    assert.match(html, /<h1>Sign in<\/h1>/);
    assert.ok(!html.includes('Create an account'));
  });
});

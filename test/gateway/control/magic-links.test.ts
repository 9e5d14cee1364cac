import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sha256 } from '../../../src/platform/crypto.ts';
import { DB_KINDS } from '../../helpers/env.ts';
import { startTestGateway, type TestGateway, tokenFromMail, uniqueEmail } from '../../helpers/gateway.ts';

const MINUTE = 60_000;

for (const kind of DB_KINDS) {
  describe(`magic links (${kind})`, () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startTestGateway(kind, { GATEWAY_LIMIT_MAGIC_LINK_PER_EMAIL: '3/3600', GATEWAY_LIMIT_MAGIC_LINK: '20/3600', GATEWAY_LIMIT_MAGIC_LINK_VERIFY: '20/300' });
    });
    after(() => gw.close());

    const ask = (email: string, ip = '198.51.100.20') => gw.request('POST', '/api/v1/auth/magic-link/request', { body: { email }, ip });
    const verify = (token: string, ip = '198.51.100.21') => gw.request('POST', '/api/v1/auth/magic-link/verify', { body: { token }, ip });

    test('a known address gets a single-use link through the outbox, sealed at rest; it signs in once', async () => {
      const { email, tenantId } = await gw.signup();
      await gw.confirm(email);
      const nudges = gw.mailNudges;
      const r = await ask(email.toUpperCase());
      assert.equal(r.status, 202);
      const mails = await gw.mails(email, 'magic_link');
      assert.equal(mails.length, 1);
      assert.equal(mails[0]!.kind, 'magic_link');
      assert.equal(mails[0]!.status, 'pending');
      assert.equal(gw.mailNudges, nudges + 1, 'the outbox worker is nudged after the commit');
      const token = tokenFromMail(mails[0]!.text);
      assert.match(token, /^gwm_[A-Za-z0-9_-]{43}$/);
      assert.ok(mails[0]!.text.includes(`http://gateway.test/auth/magic-link?token=${token}`));
      const raw = await gw.deps.db.selectFrom('outbox').select('text_body').where('recipient', '=', email).where('kind', '=', 'magic_link').executeTakeFirstOrThrow();
      assert.ok(!raw.text_body.includes(token), 'the body is sealed in the outbox');
      const link = await gw.deps.db.selectFrom('magic_links').selectAll().where('tenant_id', '=', tenantId).executeTakeFirstOrThrow();
      assert.equal(link.token_hash, sha256(token));
      assert.equal(link.expires_at, gw.clock.now() + 15 * MINUTE);

      const first = await verify(token);
      assert.equal(first.status, 200);
      assert.equal(first.body.tenant_id, tenantId);
      assert.equal(first.body.workspace_created, false);
      assert.match(first.body.session_token, /^gws_/);
      assert.equal((await gw.request('GET', '/api/v1/tenant', { token: first.body.session_token })).body.id, tenantId);
      const second = await verify(token);
      assert.equal(second.status, 409);
      assert.equal(second.body.code, 'token_used');
    });

    test('an unknown address: the same 202 body, no link, no email', async () => {
      const { email } = await gw.signup();
      const known = await ask(email);
      const stranger = uniqueEmail();
      const unknown = await ask(stranger);
      assert.equal(unknown.status, known.status);
      assert.deepEqual(unknown.body, known.body);
      assert.deepEqual(await gw.mails(stranger), []);
      const invalid = await ask('not an address');
      assert.equal(invalid.status, 400);
      assert.equal(invalid.body.errors[0].field, 'email');
    });

    test('expired after 15 minutes; unknown and malformed tokens: clear 4xx; a refused link changes nothing', async () => {
      const { email, tenantId } = await gw.signup();
      await gw.confirm(email);
      await ask(email);
      const token = tokenFromMail((await gw.mails(email, 'magic_link')).at(-1)!.text);
      gw.clock.advance(15 * MINUTE);
      const expired = await verify(token);
      assert.equal(expired.status, 410);
      assert.equal(expired.body.code, 'token_expired');
      const link = await gw.deps.db.selectFrom('magic_links').selectAll().where('token_hash', '=', sha256(token)).executeTakeFirstOrThrow();
      assert.equal(link.used_at, null);
      for (const bad of [`gwm_${'A'.repeat(43)}`, 'gwm_short', 'garbage', '']) {
        const r = await verify(bad);
        assert.equal(r.status, 400, bad);
        assert.equal(r.body.code, 'invalid_token');
        assert.equal(r.body.errors[0].field, 'token');
      }
      const sessions = await gw.deps.db.selectFrom('gateway_sessions').select('token_hash').where('tenant_id', '=', tenantId).execute();
      assert.equal(sessions.length, 1, 'only the session of the signup');
    });

    test('one link used twice at once: exactly one session', async () => {
      const { email } = await gw.signup();
      await gw.confirm(email);
      await ask(email);
      const token = tokenFromMail((await gw.mails(email, 'magic_link')).at(-1)!.text);
      const replies = await Promise.all([verify(token), verify(token), verify(token)]);
      assert.deepEqual(replies.map((r) => r.status).sort(), [200, 409, 409]);
    });

    test('requests are limited per address and per IP, silently: the same 202, no more emails', async () => {
      const { email } = await gw.signup();
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) statuses.push((await ask(email, `198.51.100.${100 + i}`)).status);
      assert.deepEqual(statuses, [202, 202, 202, 202, 202]);
      assert.equal((await gw.mails(email, 'magic_link')).length, 3, 'three per address per hour');

      const ip = '198.51.100.200';
      const other = await gw.signup();
      for (let i = 0; i < 20; i++) await ask(uniqueEmail(), ip);
      assert.equal((await ask(other.email, ip)).status, 202);
      assert.equal((await gw.mails(other.email, 'magic_link')).length, 0, 'the IP bucket was empty');
    });

    test('verify is limited per IP: 429 with Retry-After', async () => {
      const ip = '198.51.100.250';
      let last = await verify('garbage', ip);
      for (let i = 0; i < 20; i++) last = await verify('garbage', ip);
      assert.equal(last.status, 429);
      assert.equal(last.body.code, 'rate_limited');
      assert.ok(Number(last.headers['retry-after']) >= 1);
    });

    test('the sign-in page: GET shows a button and uses nothing up; the POST (with its CSRF token) signs in, once', async () => {
      const { email, tenantId } = await gw.signup();
      await gw.confirm(email);
      await ask(email, '198.51.100.30');
      const token = tokenFromMail((await gw.mails(email, 'magic_link')).at(-1)!.text);
      const page = await gw.request('GET', `/auth/magic-link?token=${encodeURIComponent(token)}`);
      assert.equal(page.status, 200);
      assert.match(String(page.headers['content-type']), /text\/html/);
      assert.match(String(page.headers['content-security-policy']), /default-src 'none'.*frame-ancestors 'none'/);
      assert.equal(page.headers['cache-control'], 'no-store');
      assert.match(page.text, /<form method="post" action="\/auth\/magic-link"/);
      assert.ok(page.text.includes(`value="${token}"`));
      const link = await gw.deps.db.selectFrom('magic_links').select('used_at').where('token_hash', '=', sha256(token)).executeTakeFirstOrThrow();
      assert.equal(link.used_at, null, 'a GET (a mail scanner) does not use the link');

      // The form's CSRF token is bound to the pre-session cookie the GET set (the console's sign-in pages, console/).
      const cookie = String(page.headers['set-cookie']).split(';')[0]!;
      const csrf = /name="csrf" value="([^"]+)"/.exec(page.text)![1]!;
      const form = (t: string) => `csrf=${encodeURIComponent(csrf)}&token=${encodeURIComponent(t)}&open=token`;
      const forged = await gw.request('POST', '/auth/magic-link', { form: `token=${encodeURIComponent(token)}`, ip: '198.51.100.31', headers: { cookie } });
      assert.equal(forged.status, 403, 'no CSRF token: refused, and the link is not used');
      const posted = await gw.request('POST', '/auth/magic-link', { form: form(token), ip: '198.51.100.31', headers: { cookie } });
      assert.equal(posted.status, 200);
      const session = /gws_[A-Za-z0-9_-]{43}/.exec(posted.text)?.[0];
      assert.ok(session);
      assert.equal((await gw.request('GET', '/api/v1/tenant', { token: session })).body.id, tenantId);
      const again = await gw.request('POST', '/auth/magic-link', { form: form(token), ip: '198.51.100.31', headers: { cookie } });
      assert.equal(again.status, 409);
      assert.match(again.text, /already been used/);
      const escaped = await gw.request('GET', '/auth/magic-link?token=%22%3E%3Cscript%3E');
      assert.ok(!escaped.text.includes('"><script>'));
    });
  });

  describe(`GATEWAY_MAGIC_LINK_URL (${kind})`, () => {
    test('the link follows the template, and the gateway serves no page of its own', async () => {
      const gw = await startTestGateway(kind, { GATEWAY_MAGIC_LINK_URL: 'https://console.example/sign-in?token={token}' });
      try {
        const { email } = await gw.signup();
        await gw.request('POST', '/api/v1/auth/magic-link/request', { body: { email } });
        const text = (await gw.mails(email, 'magic_link'))[0]!.text;
        const token = tokenFromMail(text);
        assert.ok(text.includes(`https://console.example/sign-in?token=${token}`));
        assert.equal((await gw.request('GET', `/auth/magic-link?token=${token}`)).status, 404);
      } finally {
        await gw.close();
      }
    });
  });
}

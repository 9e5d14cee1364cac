import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { gatewayMigrations } from '../../../src/gateway/migrations.ts';
import type { GatewayTables } from '../../../src/gateway/schema.ts';
import { sha256 } from '../../../src/platform/crypto.ts';
import { closeDatabase, migrateToLatest, openDatabase } from '../../../src/platform/db.ts';
import { freshDatabase } from '../../helpers/database.ts';
import { DB_KINDS } from '../../helpers/env.ts';
import { ADMIN_TOKEN, startTestGateway, type TestGateway, tokenFromMail, uniqueEmail } from '../../helpers/gateway.ts';

const HOUR = 3_600_000;
const csrfOf = (html: string) => /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? assert.fail(`no CSRF field in ${html.slice(0, 300)}`);

/**
 * Who holds an address (workspace-ownership.ts, address-confirmation.ts),
 * through the control plane's real app: an API sign-up is unconfirmed until
 * its emailed link is followed; sign-ins prove the address and never join an
 * unconfirmed workspace; an unconfirmed holder is released by a proof, or by
 * another sign-up once its link has expired.
 */
for (const kind of DB_KINDS) {
  describe(`workspace ownership (${kind})`, () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startTestGateway(kind);
    });
    after(() => gw.close());

    const tenantOf = async (session: string) => (await gw.request('GET', '/api/v1/tenant', { token: session })).body as { id: string; email: string; email_status: string };
    const askLink = (email: string) => gw.request('POST', '/api/v1/auth/magic-link/request', { body: { email }, ip: '198.51.100.40' });
    const newestLink = async (email: string) => tokenFromMail((await gw.mails(email, 'magic_link')).at(-1)!.text);
    const verify = (token: string) => gw.request('POST', '/api/v1/auth/magic-link/verify', { body: { token }, ip: '198.51.100.41' });

    test('an API sign-up is unconfirmed and emails a link; its page names the workspace and confirms nothing on GET; the POST confirms; then magic links join it', async () => {
      const { email, tenantId, session } = await gw.signup(undefined, 'Mine Really');
      assert.equal((await tenantOf(session)).email_status, 'unconfirmed');
      const [mail] = await gw.mails(email, 'email_confirmation');
      assert.ok(mail);
      assert.match(mail.text, /A workspace, "Mine Really" \(created \d{4}-\d\d-\d\d\)/);
      assert.match(mail.text, /If you did not create this workspace, ignore this email and do not open the link/);
      const token = tokenFromMail(mail.text);
      assert.match(token, /^gwc_[A-Za-z0-9_-]{43}$/);
      assert.ok(mail.text.includes(`http://gateway.test/auth/confirm-email?token=${token}`));
      const row = await gw.deps.db.selectFrom('tenants').selectAll().where('id', '=', tenantId).executeTakeFirstOrThrow();
      assert.equal(row.confirmation_hash, sha256(token), 'only the hash is stored');
      assert.equal(row.confirmation_expires_at, gw.clock.now() + 24 * HOUR);

      const page = await gw.request('GET', `/auth/confirm-email?token=${token}`);
      assert.equal(page.status, 200);
      assert.match(page.text, /<strong>Mine Really<\/strong>/);
      assert.match(page.text, /If you did not create it, do not confirm/);
      assert.equal((await tenantOf(session)).email_status, 'unconfirmed', 'a GET (a mail scanner) confirms nothing');
      const cookie = String(page.headers['set-cookie']).split(';')[0]!;
      const forged = await gw.request('POST', '/auth/confirm-email', { form: `token=${token}`, headers: { cookie } });
      assert.equal(forged.status, 403, 'without the CSRF token');
      const posted = await gw.request('POST', '/auth/confirm-email', { form: `csrf=${encodeURIComponent(csrfOf(page.text))}&token=${token}`, headers: { cookie } });
      assert.equal(posted.status, 200);
      assert.match(posted.text, /<h1>Address confirmed<\/h1>/);
      assert.equal((await tenantOf(session)).email_status, 'confirmed');
      const again = await gw.request('POST', '/api/v1/auth/confirm-email', { body: { token } });
      assert.equal(again.status, 200, 'a second click: the same answer');
      assert.equal(again.body.tenant_id, tenantId);

      await askLink(email);
      const mailText = (await gw.mails(email, 'magic_link')).at(-1)!.text;
      assert.doesNotMatch(mailText, /never confirmed/);
      const signedIn = await verify(await newestLink(email));
      assert.deepEqual([signedIn.body.tenant_id, signedIn.body.workspace_created], [tenantId, false]);
      for (const bad of ['gwc_short', `gwc_${'A'.repeat(43)}`]) {
        const r = await gw.request('POST', '/api/v1/auth/confirm-email', { body: { token: bad } });
        assert.deepEqual([r.status, r.body.code], [400, 'invalid_token']);
      }
    });

    test('another sign-up of an unconfirmed address: 409 while its link lives; after it expires the holder is released, and keeps its key and session', async () => {
      const first = await gw.signup();
      const token = tokenFromMail((await gw.mails(first.email, 'email_confirmation'))[0]!.text);
      const early = await gw.request('POST', '/api/v1/signup', { body: { name: 'Second', email: first.email }, ip: '203.0.113.60' });
      assert.deepEqual([early.status, early.body.code], [409, 'email_taken']);
      gw.clock.advance(24 * HOUR - 1);
      assert.equal((await gw.request('POST', '/api/v1/signup', { body: { name: 'Second', email: first.email }, ip: '203.0.113.60' })).status, 409);
      gw.clock.advance(1);
      const second = await gw.request('POST', '/api/v1/signup', { body: { name: 'Second', email: first.email }, ip: '203.0.113.60' });
      assert.equal(second.status, 201, second.text);
      assert.notEqual(second.body.tenant_id, first.tenantId);
      const old = await tenantOf(first.session);
      assert.deepEqual([old.id, old.email, old.email_status], [first.tenantId, first.email, 'released'], 'its session works; it shows the address it held');
      assert.equal((await gw.request('GET', '/api/v1/tenant/api-keys', { token: first.session })).body.api_keys[0].id, first.apiKeyId);
      const late = await gw.request('POST', '/api/v1/auth/confirm-email', { body: { token } });
      assert.deepEqual([late.status, late.body.code], [409, 'workspace_released']);
      assert.equal((await tenantOf(second.body.session_token)).email_status, 'unconfirmed');
    });

    test('an expired link is refused with 410; a new one on request replaces it; none for a confirmed or released workspace', async () => {
      const s = await gw.signup();
      const old = tokenFromMail((await gw.mails(s.email, 'email_confirmation'))[0]!.text);
      gw.clock.advance(24 * HOUR);
      const expired = await gw.request('POST', '/api/v1/auth/confirm-email', { body: { token: old } });
      assert.deepEqual([expired.status, expired.body.code], [410, 'token_expired']);
      const resent = await gw.request('POST', '/api/v1/tenant/email-confirmation', { token: s.session });
      assert.equal(resent.status, 202);
      assert.equal(Date.parse(resent.body.expires_at), gw.clock.now() + 24 * HOUR);
      const mails = await gw.mails(s.email, 'email_confirmation');
      assert.equal(mails.length, 2);
      const fresh = tokenFromMail(mails.at(-1)!.text);
      assert.deepEqual((await gw.request('POST', '/api/v1/auth/confirm-email', { body: { token: old } })).body.code, 'invalid_token', 'replaced');
      assert.equal((await gw.request('POST', '/api/v1/auth/confirm-email', { body: { token: fresh } })).status, 200);
      const confirmed = await gw.request('POST', '/api/v1/tenant/email-confirmation', { token: s.session });
      assert.deepEqual([confirmed.status, confirmed.body.code], [409, 'email_confirmed']);
      assert.equal((await gw.request('POST', '/api/v1/tenant/email-confirmation')).status, 401);
    });

    test('a sign-up with the admin token (an operator invitation) is confirmed at once, and takes the address from an unconfirmed holder', async () => {
      const invited = await startTestGateway(kind, { GATEWAY_SIGNUP: 'token', GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN });
      try {
        const email = uniqueEmail();
        // An unconfirmed holder from a time the gateway's sign-up was open.
        await invited.deps.db.insertInto('tenants').values({ id: 'squatter', name: 'S', email, store_bodies: 0, settings: '{}', created_at: invited.clock.now(), confirmation_expires_at: invited.clock.now() + HOUR }).execute();
        const r = await invited.request('POST', '/api/v1/signup', { body: { name: 'Invited', email }, token: ADMIN_TOKEN });
        assert.equal(r.status, 201, r.text);
        assert.equal((await invited.request('GET', '/api/v1/tenant', { token: r.body.session_token })).body.email_status, 'confirmed');
        assert.deepEqual(await invited.mails(email, 'email_confirmation'), [], 'no confirmation email: the operator vouches');
        const squatter = await invited.deps.db.selectFrom('tenants').select(['email', 'released_email']).where('id', '=', 'squatter').executeTakeFirstOrThrow();
        assert.deepEqual({ ...squatter }, { email: null, released_email: email });
      } finally {
        await invited.close();
      }
    });

    test('three proven sign-ins of one unconfirmed address at once end in one new workspace; the holder is released once', async () => {
      const squatter = await gw.signup();
      for (let i = 0; i < 3; i++) await askLink(squatter.email);
      const tokens = (await gw.mails(squatter.email, 'magic_link')).map((m) => tokenFromMail(m.text));
      assert.equal(tokens.length, 3);
      const replies = await Promise.all(tokens.map((t) => verify(t)));
      assert.deepEqual(replies.map((r) => r.status), [200, 200, 200], JSON.stringify(replies.map((r) => r.body)));
      assert.equal(new Set(replies.map((r) => r.body.tenant_id)).size, 1);
      assert.deepEqual(replies.map((r) => r.body.workspace_created).sort(), [false, false, true]);
      assert.notEqual(replies[0]!.body.tenant_id, squatter.tenantId);
      const holders = await gw.deps.db.selectFrom('tenants').select('id').where('email', '=', squatter.email).execute();
      assert.deepEqual(holders.map((h) => h.id), [replies[0]!.body.tenant_id]);
      assert.equal((await gw.mails(squatter.email, 'workspace_released')).length, 1);
    });

    test('GATEWAY_SIGNUP=closed: a magic link to an unconfirmed address releases its holder and says to ask an operator', async () => {
      const closed = await startTestGateway(kind, { GATEWAY_SIGNUP: 'closed' });
      try {
        const email = uniqueEmail();
        await closed.deps.db.insertInto('tenants').values({ id: 'squatter', name: 'S', email, store_bodies: 0, settings: '{}', created_at: closed.clock.now() }).execute();
        await closed.request('POST', '/api/v1/auth/magic-link/request', { body: { email } });
        const token = tokenFromMail((await closed.mails(email, 'magic_link'))[0]!.text);
        const r = await closed.request('POST', '/api/v1/auth/magic-link/verify', { body: { token } });
        assert.deepEqual([r.status, r.body.code], [403, 'signup_by_invitation']);
        const row = await closed.deps.db.selectFrom('tenants').select('email').where('id', '=', 'squatter').executeTakeFirstOrThrow();
        assert.equal(row.email, null);
        assert.equal((await closed.request('POST', '/api/v1/auth/magic-link/verify', { body: { token } })).body.code, 'token_used');
      } finally {
        await closed.close();
      }
    });
  });

  describe(`migration 0008 on a database in use (${kind})`, () => {
    test('existing workspaces count as confirmed, and the rebuild keeps their sessions, keys, links and provider keys', async () => {
      const database = await freshDatabase(kind);
      const { db } = await openDatabase<GatewayTables>({ url: database.url, sqlitePath: join(database.dataDir, 'gateway.sqlite') });
      try {
        const before = Object.fromEntries(Object.entries(gatewayMigrations).filter(([name]) => name < '0008'));
        await migrateToLatest(db, before);
        // biome-ignore lint/suspicious/noExplicitAny: the schema as it was before 0008
        const old = db as any;
        await old.insertInto('tenants').values({ id: 't1', name: 'Old', email: 'old@example.com', store_bodies: 1, settings: '{"cache":{}}', created_at: 1000 }).execute();
        await old.insertInto('gateway_sessions').values({ token_hash: 'h1', tenant_id: 't1', created_at: 1000, expires_at: 9e12 }).execute();
        await old.insertInto('magic_links').values({ token_hash: 'm1', tenant_id: 't1', created_at: 1000, expires_at: 9e12, used_at: null }).execute();
        await old.insertInto('api_keys').values({ id: 'k1', tenant_id: 't1', name: 'default', key_hash: 'kh', prefix: 'sk-gw-x', created_at: 1000, limits: '{}' }).execute();
        await old.insertInto('provider_keys').values({ tenant_id: 't1', provider: 'openai', key_sealed: 'sealed', key_last4: 'abcd', created_at: 1000 }).execute();
        await migrateToLatest(db, gatewayMigrations);
        const tenant = await db.selectFrom('tenants').selectAll().executeTakeFirstOrThrow();
        assert.deepEqual(
          [tenant.id, tenant.email, tenant.store_bodies, tenant.settings, tenant.email_confirmed_at, tenant.released_email],
          ['t1', 'old@example.com', 1, '{"cache":{}}', 1000, null],
        );
        for (const table of ['gateway_sessions', 'magic_links', 'api_keys', 'provider_keys'] as const) {
          assert.equal((await db.selectFrom(table).select('tenant_id').execute()).length, 1, `${table} kept`);
        }
        // Foreign keys still hold (a workspace's rows go with it), and the address may now be NULL, several times.
        await db.insertInto('tenants').values({ id: 't2', name: 'A', email: null, store_bodies: 0, settings: '{}', created_at: 1 }).execute();
        await db.insertInto('tenants').values({ id: 't3', name: 'B', email: null, store_bodies: 0, settings: '{}', created_at: 1 }).execute();
        await assert.rejects(db.insertInto('tenants').values({ id: 't4', name: 'C', email: 'old@example.com', store_bodies: 0, settings: '{}', created_at: 1 }).execute());
        await assert.rejects(db.insertInto('api_keys').values({ id: 'k2', tenant_id: 'nobody', name: 'x', key_hash: 'kh2', prefix: 'p', created_at: 1, limits: '{}' }).execute());
        await db.deleteFrom('tenants').where('id', '=', 't1').execute();
        assert.equal((await db.selectFrom('api_keys').select('id').execute()).length, 0, 'cascades as before');
      } finally {
        await closeDatabase(db);
        await database.drop();
      }
    });
  });
}

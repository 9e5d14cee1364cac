import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import type { MailTransport } from '../../../src/platform/mail-transport.ts';
import { DB_KINDS } from '../../helpers/env.ts';
import { type LiveGateway, startLiveGateway, usageRecord } from '../../helpers/gateway-service.ts';

/** What the gateway's outbox worker sent, by recipient. */
class Inbox {
  readonly mails: { to: string; subject: string; text: string }[] = [];
  readonly transport: MailTransport = { send: async (m) => void this.mails.push({ to: m.to, subject: m.subject, text: m.text }) };
  /** The newest email to `to` whose subject matches, among those sent after the first `since`, waited for (the worker sends after the commit). */
  async waitFor(to: string, subject: RegExp, since = 0): Promise<{ subject: string; text: string }> {
    for (let i = 0; i < 400; i++) {
      const mail = this.mails.slice(since).filter((m) => m.to === to && subject.test(m.subject)).at(-1);
      if (mail) return mail;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`no email "${subject}" to ${to}`);
  }
}
const tokenIn = (text: string) => new URL(/https?:\/\/\S+/.exec(text)![0]).searchParams.get('token')!;

/**
 * Defect 9, workspace pre-hijack, through the whole gateway: an attacker
 * signs up through the API with the victim's address (no proof of it) and
 * keeps the key and session that sign-up returns; the victim later signs in
 * by magic link. Before the fix the victim landed in the attacker's
 * workspace, and the attacker saw the victim's provider key, called with it
 * through the attacker's own sk-gw- key, and read the victim's prompts with
 * store_bodies on.
 */
for (const kind of DB_KINDS) {
  describe(`a workspace signed up for someone else's address is not theirs (${kind})`, () => {
    let gw: LiveGateway;
    const inbox = new Inbox();
    before(async () => {
      gw = await startLiveGateway(kind, { GATEWAY_MAIL_POLL_MS: '20' }, { transport: inbox.transport });
    });
    after(() => gw.close());

    const signInByLink = async (email: string) => {
      const before = inbox.mails.length;
      assert.equal((await gw.api('/api/v1/auth/magic-link/request', { body: { email } })).status, 202);
      const mail = await inbox.waitFor(email, /sign-in link/, before);
      const verified = await gw.api('/api/v1/auth/magic-link/verify', { body: { token: tokenIn(mail.text) } });
      assert.equal(verified.status, 200, JSON.stringify(verified.body));
      return { mail, tenantId: verified.body.tenant_id as string, session: verified.body.session_token as string, created: verified.body.workspace_created as boolean };
    };

    test("the owner's magic-link sign-in lands in a workspace of their own; the attacker's workspace loses the address and reaches nothing of the owner's", async () => {
      const victim = `victim${process.pid}@example.com`;
      const attacker = await gw.api('/api/v1/signup', { body: { name: 'Totally the victim', email: victim } });
      assert.equal(attacker.status, 201);
      const attackerSession = attacker.body.session_token as string;
      const attackerKey = attacker.body.api_key as string;
      // The attacker's workspace works at once with its own provider keys (docs/console.md).
      assert.equal((await gw.api('/api/v1/tenant', { token: attackerSession })).body.email_status, 'unconfirmed');

      const owner = await signInByLink(victim);
      assert.match(owner.mail.text, /was created through the API and whose address was never confirmed/, 'the link says what following it does');
      assert.notEqual(owner.tenantId, attacker.body.tenant_id, 'not the attacker\'s workspace');
      assert.equal(owner.created, true);
      const ownerTenant = (await gw.api('/api/v1/tenant', { token: owner.session })).body;
      assert.deepEqual([ownerTenant.email, ownerTenant.email_status], [victim, 'confirmed']);
      const released = await inbox.waitFor(victim, /was released/);
      assert.match(released.text, /"Totally the victim"/);

      // The owner sets up their workspace: a provider key, an API key, body storage, a call with a private prompt.
      const providerKey = 'sk-owner-provider-key-OWNR';
      assert.equal((await gw.api('/api/v1/tenant/provider-keys', { token: owner.session, body: { provider: 'openai', key: providerKey, base_url: `${gw.fake.url}/v1` } })).status, 201);
      const ownerKey = (await gw.api('/api/v1/tenant/api-keys', { token: owner.session, body: { name: 'mine' } })).body.key as string;
      assert.equal((await gw.api('/api/v1/tenant', { method: 'PATCH', token: owner.session, body: { store_bodies: true } })).status, 200);
      const asOwner = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: ownerKey, maxRetries: 0 });
      const call = await asOwner.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'the owner private prompt' }] }).withResponse();
      assert.equal(gw.fake.calls.last()?.headers['authorization'], `Bearer ${providerKey}`);
      const record = await usageRecord(gw, call.response.headers.get('x-request-id')!);
      assert.match(record.request_body ?? '', /the owner private prompt/);

      // The attacker, with the signup's session and key: their own (released) workspace, and nothing of the owner's.
      const mine = (await gw.api('/api/v1/tenant', { token: attackerSession })).body;
      assert.deepEqual([mine.id, mine.email_status], [attacker.body.tenant_id, 'released']);
      assert.deepEqual((await gw.api('/api/v1/tenant/provider-keys', { token: attackerSession })).body.provider_keys, []);
      assert.equal((await gw.api('/api/v1/tenant', { method: 'PATCH', token: attackerSession, body: { store_bodies: true } })).status, 200);
      const log = await gw.api('/api/v1/tenant/requests', { token: attackerSession });
      assert.deepEqual(log.body.requests, []);
      assert.equal((await gw.api('/api/v1/tenant/usage', { token: attackerSession })).body.totals.requests, 0);
      const before = gw.fake.calls.count;
      const asAttacker = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: attackerKey, maxRetries: 0 });
      await assert.rejects(
        asAttacker.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
        (err: { status?: number; code?: string }) => err.status === 400 && err.code === 'provider_key_missing',
      );
      assert.equal(gw.fake.calls.count, before, "the owner's provider key was not used");

      // Nothing signs in to the attacker's workspace any more; the owner's next sign-in is their own workspace again.
      const again = await signInByLink(victim);
      assert.deepEqual([again.tenantId, again.created], [owner.tenantId, false]);
      const holders = await gw.service.deps.db.selectFrom('tenants').select(['id', 'email', 'released_email']).where('id', '=', attacker.body.tenant_id).execute();
      assert.deepEqual(holders.map((h) => ({ ...h })), [{ id: attacker.body.tenant_id, email: null, released_email: victim }]);
    });
  });
}

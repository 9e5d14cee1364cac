import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { describe, test } from 'node:test';
import { promisify } from 'node:util';
import OpenAI from 'openai';
import { loadGatewayConfig } from '../../../src/gateway/config.ts';
import { gatewayService } from '../../../src/gateway/main.ts';
import { loadProviderKeys } from '../../../src/gateway/control-plane/provider-keys.ts';
import { providerKeyAad } from '../../../src/gateway/schema.ts';
import { ManualClock } from '../../../src/platform/clock.ts';
import type { ConfigError } from '../../../src/platform/config.ts';
import { encrypt } from '../../../src/platform/crypto.ts';
import { enqueueEmail, openBody } from '../../../src/platform/mail.ts';
import { DB_KINDS } from '../../helpers/env.ts';
import { startLiveGateway, startReplica } from '../../helpers/gateway-service.ts';

const run = promisify(execFile);
// The live helper's key is the one being retired.
const OLD = 'b'.repeat(64);
const NEW = 'c'.repeat(64);
const NOBODYS = 'd'.repeat(64);
const key = (hex: string) => Buffer.from(hex, 'hex');
const ask = (client: OpenAI) => client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }] });

for (const kind of DB_KINDS) {
  describe(`encryption key rotation (${kind})`, () => {
    test('GATEWAY_ENCRYPTION_KEY rotates without downtime: the old key reads while npm run rotate-keys reseals every provider key and queued email, then the new key alone serves', async (t) => {
      const gw = await startLiveGateway(kind);
      t.after(() => gw.close());
      const a = await gw.tenant(); // openai and anthropic keys, sealed under the old key
      const b = await gw.tenant({ providers: ['openai'] });
      const db = gw.service.deps.db;
      // A key sealed under a key nobody has any more: reported by name, left as it is.
      await db
        .insertInto('provider_keys')
        .values({ tenant_id: b.tenantId, provider: 'anthropic', key_sealed: encrypt(key(NOBODYS), 'lost-key', providerKeyAad(b.tenantId, 'anthropic')), key_last4: 'lost', base_url: null, created_at: Date.now() })
        .execute();
      // An email still waiting (due in the future, so the running worker leaves it), sealed under the old key.
      const mailId = await enqueueEmail(db, { clock: new ManualClock(Date.now() + 86_400_000), key: key(OLD) }, { kind: 'test', to: 'x@example.com', subject: 's', text: 'the link', html: '<p>the link</p>' });

      // The rollout: a replica with the new key and the old one kept for reading serves both tenants.
      const env = { DATA_DIR: gw.db.dataDir, GATEWAY_ALLOW_PRIVATE_UPSTREAMS: '127.0.0.1', ...(gw.db.url ? { GATEWAY_DATABASE_URL: gw.db.url } : {}) };
      const rolling = await startReplica(gw, { GATEWAY_ENCRYPTION_KEY: NEW, GATEWAY_ENCRYPTION_KEY_PREVIOUS: OLD });
      assert.equal((await ask(new OpenAI({ apiKey: a.apiKey, baseURL: `${rolling.url}/v1`, maxRetries: 0 }))).choices[0]?.message.content !== undefined, true);

      const [keys, outbox] = await gatewayService.configure({ ...env, GATEWAY_ENCRYPTION_KEY: NEW, GATEWAY_ENCRYPTION_KEY_PREVIOUS: OLD }).rotateKeys();
      assert.deepEqual(
        { resealed: keys!.resealed, current: keys!.current, unreadable: keys!.unreadable },
        { resealed: 3, current: 0, unreadable: [`tenant ${b.tenantId} provider anthropic`] },
      );
      assert.ok(outbox!.resealed >= 1, 'the waiting email was resealed');
      assert.equal((await loadProviderKeys(db, [key(OLD)], a.tenantId)).size, 0, 'nothing opens with the old key any more');
      assert.deepEqual([...(await loadProviderKeys(db, [key(NEW)], a.tenantId)).keys()].sort(), ['anthropic', 'openai']);
      const mail = await db.selectFrom('outbox').select(['text_body', 'html_body']).where('id', '=', mailId).executeTakeFirstOrThrow();
      assert.equal(openBody([key(NEW)], mailId, 'text', mail.text_body), 'the link');
      assert.equal(openBody([key(NEW)], mailId, 'html', mail.html_body!), '<p>the link</p>');

      // The old key can go: a replica with the new key alone serves the tenant.
      const rotated = await startReplica(gw, { GATEWAY_ENCRYPTION_KEY: NEW });
      assert.ok((await ask(new OpenAI({ apiKey: b.apiKey, baseURL: `${rotated.url}/v1`, maxRetries: 0 }))).choices[0]?.message.content);

      // npm run rotate-keys again, as an operator runs it: nothing left to reseal; the unreadable key named, exit status 1.
      const cli = await run(process.execPath, ['src/rotate-keys.ts'], { env: { ...process.env, ...env, GATEWAY_ENCRYPTION_KEY: NEW, GATEWAY_ENCRYPTION_KEY_PREVIOUS: OLD } }).then(
        () => ({ code: 0, stdout: '', stderr: '' }),
        (err: { code: number; stdout: string; stderr: string }) => err,
      );
      assert.equal(cli.code, 1);
      assert.match(cli.stdout, /gateway provider keys: 0 resealed under the current key, 3 already current, 1 unreadable/);
      assert.match(cli.stdout, new RegExp(`opens with no key given: tenant ${b.tenantId} provider anthropic`));
      assert.match(cli.stdout, /gateway outbox \(GATEWAY_ENCRYPTION_KEY\): 0 resealed/);
      assert.match(cli.stderr, /1 sealed value\(s\) open with neither the current key nor/);
    });
  });
}

test('a previous key must be a key, and not the current one', () => {
  const env = { DATA_DIR: '/tmp', GATEWAY_ENCRYPTION_KEY: NEW };
  assert.deepEqual(loadGatewayConfig({ ...env, GATEWAY_ENCRYPTION_KEY_PREVIOUS: `${OLD}, ${NOBODYS}` }).previousEncryptionKeys, [key(OLD), key(NOBODYS)]);
  const problems = (extra: Record<string, string>) => {
    try {
      loadGatewayConfig({ ...env, ...extra });
      return [];
    } catch (err) {
      return (err as ConfigError).problems;
    }
  };
  assert.match(problems({ GATEWAY_ENCRYPTION_KEY_PREVIOUS: 'short' }).join(), /GATEWAY_ENCRYPTION_KEY_PREVIOUS must be keys of 32 bytes/);
  assert.match(problems({ GATEWAY_ENCRYPTION_KEY_PREVIOUS: NEW }).join(), /holds the same key as GATEWAY_ENCRYPTION_KEY/);
});

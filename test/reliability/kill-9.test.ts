import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import OpenAI from 'openai';
import pg from 'pg';
import { createFakeProvider } from '../../tools/fake-provider/server.ts';
import { freePort, PASSWORD, tokenFromMail } from '../helpers/auth.ts';
import { freshDatabase, type TestDatabase } from '../helpers/database.ts';
import { POSTGRES_URL } from '../helpers/env.ts';
import { startServiceProcess } from '../helpers/service-process.ts';
import { CERT_FILE, startSmtpServer } from '../helpers/smtp.ts';

const API_KEY = randomBytes(24).toString('hex');
/** Successful writes the doomed replica must have answered before it is killed. */
const BEFORE_KILL = 20;
const WORKERS = 6;

interface Replica {
  url: string;
  kill9(): Promise<void>;
  stop(): Promise<number | string>;
}

/** A load that spreads requests over two replicas until `stop`, kills the first once it has answered enough, and keeps what was acknowledged. */
async function loadWithKill<Ack>(
  a: Replica,
  b: Replica,
  send: (replica: Replica, worker: number, i: number) => Promise<Ack | undefined>,
): Promise<{ acked: Ack[]; onAAfterStart: number; onBAfterKill: number }> {
  const acked: Ack[] = [];
  let onA = 0;
  let onBAfterKill = 0;
  let killed = false;
  let stop = false;
  let killing: Promise<void> | undefined;
  const worker = async (w: number) => {
    for (let i = 0; !stop; i++) {
      const replica = !killed && (i + w) % 2 === 0 ? a : b;
      let ack: Ack | undefined;
      try {
        ack = await send(replica, w, i);
      } catch (err) {
        // Only the killed replica may fail, and only by going away (a refused or cut connection).
        if (replica !== a || !killing) throw err;
        continue;
      }
      if (ack === undefined) continue;
      acked.push(ack);
      if (replica === a) onA++;
      else if (killed) onBAfterKill++;
      if (onA >= BEFORE_KILL && !killing) {
        killing = a.kill9().then(() => {
          killed = true;
          setTimeout(() => {
            stop = true;
          }, 1500);
        });
      }
    }
  };
  const deadline = setTimeout(() => {
    stop = true;
  }, 30_000);
  await Promise.all(Array.from({ length: WORKERS }, (_, w) => worker(w)));
  clearTimeout(deadline);
  assert.ok(killing, `the first replica answered ${onA} writes in 30 s, fewer than ${BEFORE_KILL}`);
  await killing;
  return { acked, onAAfterStart: onA, onBAfterKill };
}

async function query<Row>(database: TestDatabase, text: string, values: unknown[]): Promise<Row[]> {
  const client = new pg.Client({ connectionString: database.url! });
  await client.connect();
  try {
    return (await client.query(text, values)).rows as Row[];
  } finally {
    await client.end();
  }
}

function tempDir(t: TestContext, prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * Issue 9, faults: kill -9 of one of two replicas (real processes sharing
 * one PostgreSQL database) in the middle of a write load. Every request
 * that got a 2xx is in the database afterwards, and the surviving replica
 * answers every request sent to it, during and after the kill.
 */
describe('kill -9 of a replica during a write load', { skip: POSTGRES_URL ? false : 'needs TEST_POSTGRES_URL (two replicas share one database)' }, () => {
  test('account service: every acknowledged signup (with its email in the outbox), login and token is in the database', { timeout: 90_000 }, async (t) => {
    const database = await freshDatabase('postgres');
    const smtp = await startSmtpServer();
    t.after(async () => {
      await smtp.close();
      await database.drop();
    });
    const shared = {
      AUTH_DATABASE_URL: database.url!,
      AUTH_API_KEY: API_KEY,
      AUTH_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
      AUTH_BCRYPT_COST: '4',
      SMTP_HOST: 'localhost',
      SMTP_PORT: String(smtp.port),
      SMTP_TLS_CA: CERT_FILE,
      SMTP_FROM: 'Accounts <accounts@example.com>',
      AUTH_MAIL_POLL_MS: '50',
      AUTH_TOKENS_MAX_PER_USER: '1000',
    };
    const start = async (): Promise<Replica> => {
      const port = await freePort();
      const url = `http://127.0.0.1:${port}`;
      const p = await startServiceProcess(t, 'src/auth/main.ts', { ...shared, AUTH_PORT: String(port), AUTH_BASE_URL: url, DATA_DIR: tempDir(t, 'kill9-auth-') });
      return { url, kill9: () => p.kill9(), stop: () => p.stop() };
    };
    const a = await start();
    const b = await start();
    let ips = 0;
    const send = async (replica: Replica, method: string, path: string, body: unknown, bearer?: string) => {
      const r = await fetch(`${replica.url}${path}`, {
        method,
        headers: { 'x-api-key': API_KEY, 'content-type': 'application/json', ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(10_000),
      });
      const json = (await r.json()) as Record<string, unknown>;
      assert.ok(r.status < 300, `${method} ${path} on ${replica === a ? 'A' : 'B'}: ${r.status} ${JSON.stringify(json)}`);
      return json;
    };
    const ip = () => `100.64.${(++ips >> 8) & 255}.${ips & 255}`;

    // Accounts that sign in during the load, made beforehand (verified through the real email).
    const accounts: { email: string; session: string }[] = [];
    for (let i = 0; i < WORKERS; i++) {
      const email = `kill9.${i}.${process.pid}@example.com`;
      await send(b, 'POST', '/v1/register', { email, password: PASSWORD, ip: ip() });
      const mail = await smtp.waitFor((m) => m.to.includes(email) && m.subject.includes('Confirm'));
      await send(b, 'POST', '/v1/verify', { token: tokenFromMail(mail) });
      const { session_token } = await send(b, 'POST', '/v1/login', { email, password: PASSWORD, ip: ip() });
      accounts.push({ email, session: session_token as string });
    }

    type Ack = { kind: 'signup'; email: string } | { kind: 'login'; session: string } | { kind: 'token'; id: string };
    const { acked, onBAfterKill } = await loadWithKill<Ack>(a, b, async (replica, w, i) => {
      const account = accounts[w]!;
      switch (i % 3) {
        case 0: {
          const email = `kill9.signup.${w}.${i}.${process.pid}@example.com`;
          await send(replica, 'POST', '/v1/register', { email, password: PASSWORD, ip: ip() });
          return { kind: 'signup', email };
        }
        case 1: {
          const { session_token } = await send(replica, 'POST', '/v1/login', { email: account.email, password: PASSWORD, ip: ip() });
          return { kind: 'login', session: session_token as string };
        }
        default: {
          const { id } = await send(replica, 'POST', '/v1/tokens', { name: `t${i}` }, account.session);
          return { kind: 'token', id: id as string };
        }
      }
    });
    assert.ok(onBAfterKill >= WORKERS, `the other replica went on serving (${onBAfterKill} writes after the kill)`);

    const signups = acked.flatMap((x) => (x.kind === 'signup' ? [x.email] : []));
    const users = await query<{ email: string }>(database, 'select email from users where email = any($1)', [signups]);
    assert.equal(users.length, signups.length, 'every acknowledged signup is an account');
    const mails = await query<{ recipient: string }>(database, "select recipient from outbox where kind = 'verify_email' and recipient = any($1)", [signups]);
    assert.deepEqual(new Set(mails.map((m) => m.recipient)), new Set(signups), 'every acknowledged signup has its verification email in the outbox');
    for (const x of acked) {
      if (x.kind === 'login') await send(b, 'GET', '/v1/me', undefined, x.session);
    }
    const tokens = acked.flatMap((x) => (x.kind === 'token' ? [x.id] : []));
    const stored = await query<{ id: string }>(database, 'select id from personal_access_tokens where id = any($1)', [tokens]);
    assert.equal(stored.length, tokens.length, 'every acknowledged token is stored');
    assert.ok(signups.length > 0 && tokens.length > 0 && acked.some((x) => x.kind === 'login'));
    t.diagnostic(`${signups.length} signups, ${acked.length - signups.length - tokens.length} logins, ${tokens.length} tokens acknowledged; ${onBAfterKill} after the kill`);
    assert.equal(await b.stop(), 0);
  });

  test('gateway: every answered call has its usage record once the killed replica starts again on its data directory', { timeout: 90_000 }, async (t) => {
    const fake = await createFakeProvider({ behaviour: { text: 'one two three', latencyMs: 20, chunkDelayMs: 5 } });
    const database = await freshDatabase('postgres');
    t.after(async () => {
      await fake.close();
      await database.drop();
    });
    const shared = {
      GATEWAY_DATABASE_URL: database.url!,
      GATEWAY_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
      GATEWAY_ALLOW_PRIVATE_UPSTREAMS: '127.0.0.1',
      // Nothing reaches the database by the timer: what the killed replica answered is only in its journal.
      GATEWAY_USAGE_FLUSH_MS: '60000',
    };
    const aDir = tempDir(t, 'kill9-gw-a-');
    const start = async (dataDir: string): Promise<Replica> => {
      const port = await freePort();
      const p = await startServiceProcess(t, 'src/gateway/main.ts', { ...shared, GATEWAY_PORT: String(port), DATA_DIR: dataDir });
      return { url: `http://127.0.0.1:${port}`, kill9: () => p.kill9(), stop: () => p.stop() };
    };
    const a = await start(aDir);
    const b = await start(tempDir(t, 'kill9-gw-b-'));

    const signup = await fetch(`${a.url}/api/v1/signup`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Kill', email: 'kill9@example.com' }) });
    assert.equal(signup.status, 201);
    const { session_token: session, api_key: apiKey } = (await signup.json()) as { session_token: string; api_key: string };
    const stored = await fetch(`${b.url}/api/v1/tenant/provider-keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${session}` },
      body: JSON.stringify({ provider: 'openai', key: 'sk-fake-provider-key', base_url: `${fake.url}/v1` }),
    });
    assert.equal(stored.status, 201);
    const clients = new Map([a, b].map((r) => [r, new OpenAI({ apiKey, baseURL: `${r.url}/v1`, maxRetries: 0, timeout: 10_000 })]));

    const { acked, onBAfterKill } = await loadWithKill<string>(a, b, async (replica, w, i) => {
      const openai = clients.get(replica)!;
      const messages = [{ role: 'user' as const, content: `call ${w}.${i}` }];
      if (i % 2 === 0) {
        const { data, response } = await openai.chat.completions.create({ model: 'openai/gpt-4o-mini', messages }).withResponse();
        assert.equal(data.choices[0]?.message.content, 'one two three');
        return response.headers.get('x-request-id')!;
      }
      const { data: stream, response } = await openai.chat.completions.create({ model: 'openai/gpt-4o-mini', messages, stream: true }).withResponse();
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      assert.equal(text, 'one two three', 'the stream is whole');
      return response.headers.get('x-request-id')!;
    });
    assert.ok(onBAfterKill >= WORKERS, `the other replica went on serving (${onBAfterKill} calls after the kill)`);

    // The killed replica starts again on its own data directory; its graceful stop and the other's write the rest.
    const again = await start(aDir);
    assert.equal(await again.stop(), 0);
    assert.equal(await b.stop(), 0);
    const rows = await query<{ request_id: string; status: number }>(database, 'select request_id, status from usage_records where request_id = any($1)', [acked]);
    const missing = acked.filter((id) => !rows.some((r) => r.request_id === id));
    assert.deepEqual(missing, [], `${missing.length} of ${acked.length} answered calls have no usage record`);
    assert.ok(rows.every((r) => r.status === 200));
    t.diagnostic(`${acked.length} calls answered, ${onBAfterKill} after the kill`);
  });
});

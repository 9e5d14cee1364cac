import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { PASSWORD, startTestAuth, type TestAuth } from '../helpers/auth.ts';
import { DB_KINDS } from '../helpers/env.ts';
import { reset, resetToken } from '../helpers/recovery.ts';

const NEW_PASSWORD = 'a brand new passphrase 42';
const LOGINS = 6;

/**
 * Issue 31, A3: a sign-in checked the password against the hash it had read
 * before bcrypt and then created its session without looking again, so
 * sign-ins with the old password that overlapped a reset or a change got
 * sessions that outlived it (six of six for a reset). The session is now
 * created only if the hash verified is still the account's, in the same
 * transaction, under the row lock the reset and the change take too.
 *
 * The overlap is real: the reset (or change) is sent first and the sign-ins
 * while it hashes the new password (bcrypt cost 11, about 0.1 s here, longer
 * on a busy machine), so that they read the old hash before it commits and
 * check it after: passwords.ts runs at most 2 or 3 hashes at once, so most
 * sign-ins wait for their turn behind the writer's hash. A change first
 * checks the current password (one more hash), so its sign-ins are sent
 * about one hash's time later, measured on the spot. Whatever the
 * interleaving, no session opened with the old password may answer once the
 * reset or change has answered.
 */
for (const kind of DB_KINDS) {
  describe(`sign-ins with the old password overlapping a reset or a change (${kind})`, () => {
    let auth: TestAuth;
    before(async () => {
      // A high lockout limit: the overlapping sign-ins must not be refused by the lock instead.
      auth = await startTestAuth(kind, { AUTH_LIMIT_LOGIN: '10000/300', AUTH_BCRYPT_COST: '11', AUTH_LOCKOUT_FAILURES: '50' });
    });
    after(() => auth.close());

    const login = (email: string, password: string) =>
      auth.request('POST', '/v1/login', { body: { email, password, ip: '198.51.100.22' } });
    const me = async (token: string) => (await auth.request('GET', '/v1/me', { token })).status;

    /** Sends `writer` first, then LOGINS sign-ins with the old password `delayMs` later; returns their session tokens (200s only). */
    async function overlap(email: string, writer: () => Promise<{ status: number; text: string }>, delayMs: number): Promise<string[]> {
      const written = writer();
      await sleep(delayMs);
      const logins = Array.from({ length: LOGINS }, () => login(email, PASSWORD));
      const w = await written;
      assert.equal(w.status, 200, w.text);
      const replies = await Promise.all(logins);
      for (const r of replies) assert.ok(r.status === 200 || (r.status === 401 && r.body.code === 'invalid_credentials'), `${r.status} ${r.text}`);
      return replies.filter((r) => r.status === 200).map((r) => r.body.session_token as string);
    }

    test('a reset: no session opened with the old password survives it', async () => {
      const { email } = await auth.verifiedAccount();
      const token = await resetToken(auth, email);
      const sessions = await overlap(email, () => reset(auth, token, NEW_PASSWORD), 20);
      for (const s of sessions) assert.equal(await me(s), 401, `a session from the old password is alive (${sessions.length} opened)`);
      assert.equal((await login(email, PASSWORD)).status, 401);
      assert.equal((await login(email, NEW_PASSWORD)).status, 200);
    });

    test('a change: no session opened with the old password survives it; the changer stays signed in', async () => {
      const { email } = await auth.verifiedAccount();
      const started = performance.now();
      const changer = await auth.login(email);
      const oneHash = performance.now() - started;
      const change = () =>
        auth.request('POST', '/v1/password/change', { token: changer, body: { current_password: PASSWORD, new_password: NEW_PASSWORD } });
      const sessions = await overlap(email, change, 20 + oneHash * 1.2);
      for (const s of sessions) assert.equal(await me(s), 401, `a session from the old password is alive (${sessions.length} opened)`);
      assert.equal(await me(changer), 200);
      assert.equal((await login(email, NEW_PASSWORD)).status, 200);
    });

    test('two changes from the same current password at once: one wins, the other is told the password is wrong', async () => {
      const { email } = await auth.verifiedAccount();
      const one = await auth.login(email);
      const two = await auth.login(email);
      const change = (token: string, next: string) =>
        auth.request('POST', '/v1/password/change', { token, body: { current_password: PASSWORD, new_password: next } });
      const [a, b] = await Promise.all([change(one, NEW_PASSWORD), change(two, `${NEW_PASSWORD} two`)]);
      assert.deepEqual([a.status, b.status].sort(), [200, 401], `${a.text} ${b.text}`);
      const [winner, loser] = a.status === 200 ? [one, two] : [two, one];
      assert.equal((a.status === 200 ? b : a).body.code, 'wrong_password');
      assert.equal(await me(winner), 200);
      assert.equal(await me(loser), 401, 'the winner signed every other session out');
      const newPassword = a.status === 200 ? NEW_PASSWORD : `${NEW_PASSWORD} two`;
      assert.equal((await login(email, newPassword)).status, 200);
    });
  });
}

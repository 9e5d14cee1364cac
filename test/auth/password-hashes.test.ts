import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { hashPassword } from '../../src/auth/passwords.ts';
import { PASSWORD, startTestAuth, type TestAuth } from '../helpers/auth.ts';

/**
 * Hashes stored before the switch from @node-rs/bcrypt 1.10.7 to the `bcrypt`
 * package: bcrypt(prehash(PASSWORD)) as the old implementation wrote them,
 * labelled "$2y$" (pasted from its output, at the test cost 4 and at the
 * production cost 12).
 */
const OLD_HASHES = {
  cost4: '$2y$04$K5My25CR6O35ntxlEmhQw.Tp//YNa0pSB5afm9/AjhZfZdZm/ntUi',
  cost12: '$2y$12$TLoPs8LM5KpFK77bIOI3IOzijqDWENg2eKa4WA9ETv1k2sdzKkQzW',
};

// One database kind is enough: the hash is checked in the process, not by the database.
describe('password hashes written by the previous bcrypt implementation', () => {
  let auth: TestAuth;
  before(async () => {
    auth = await startTestAuth('sqlite', { AUTH_LIMIT_LOGIN: '1000/300' });
  });
  after(() => auth.close());

  const login = (email: string, password: string) =>
    auth.request('POST', '/v1/login', { body: { email, password, ip: '198.51.100.30' } });

  for (const [name, stored] of Object.entries(OLD_HASHES)) {
    test(`a "$2y$" hash (${name}) still signs in with its password, and only with it`, async () => {
      const { email } = await auth.verifiedAccount();
      // The row as an earlier version of the service left it.
      await auth.service.deps.db.updateTable('users').set({ password_hash: stored }).where('email', '=', email).execute();
      assert.equal((await login(email, 'correct horse battery stapler')).status, 401);
      const r = await login(email, PASSWORD);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.user.email, email);
    });
  }

  /**
   * Issue 31, A5: after AUTH_BCRYPT_COST changed, accounts hashed at the old
   * cost answered sign-ins in the old time (5-15 ms against 267-616 ms for an
   * unknown address at cost 12), and nothing ever upgraded them. A sign-in
   * that verifies a hash of another cost now stores the password again at the
   * configured cost (4 here), lower or higher; a failed one changes nothing.
   */
  for (const [name, stored] of [
    ['a lower cost (a "$2b$" hash at 5, as the service made them before the cost was raised)', 'lower'],
    ['a higher cost (the old library\'s "$2y$" hash at 12)', OLD_HASHES.cost12],
  ] as const) {
    test(`a hash at ${name} is stored again at the configured cost on the next sign-in`, async () => {
      const { email } = await auth.verifiedAccount();
      const before = stored === 'lower' ? await hashPassword(PASSWORD, 5) : stored;
      await auth.service.deps.db.updateTable('users').set({ password_hash: before }).where('email', '=', email).execute();
      const hashOf = async () =>
        (await auth.service.deps.db.selectFrom('users').select('password_hash').where('email', '=', email).executeTakeFirstOrThrow()).password_hash;

      assert.equal((await login(email, 'correct horse battery stapler')).status, 401);
      assert.equal(await hashOf(), before, 'a wrong password changes nothing');
      assert.equal((await login(email, PASSWORD)).status, 200);
      const after = await hashOf();
      assert.match(after, /^\$2b\$04\$[./A-Za-z0-9]{53}$/);
      assert.equal((await login(email, PASSWORD)).status, 200, 'the new hash signs in');
      assert.equal(await hashOf(), after, 'and is not made again');
      assert.equal((await login(email, 'correct horse battery stapler')).status, 401);
    });
  }

  test('new hashes use the "$2b$" label at the configured cost', async () => {
    const { email } = await auth.verifiedAccount();
    const row = await auth.service.deps.db.selectFrom('users').select('password_hash').where('email', '=', email).executeTakeFirstOrThrow();
    assert.match(row.password_hash, /^\$2b\$04\$[./A-Za-z0-9]{53}$/);
    assert.equal((await login(email, PASSWORD)).status, 200);
  });
});

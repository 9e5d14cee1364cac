import { register, verifyEmail } from '../../src/auth/accounts.ts';
import { loadAuthConfig } from '../../src/auth/config.ts';
import { createAuthService } from '../../src/auth/service.ts';
import { openBody } from '../../src/platform/mail.ts';
import { OAuthUser } from '../lib/oauth-flow.ts';
import { json, type Origin } from './http.ts';

/**
 * Who the soak's traffic comes from, and what they hold: users with their
 * sessions, a personal access token each, OAuth token families (one public
 * client each, as desktop agents register), and gateway tenants with their
 * API keys. Everything is made through the services' own APIs, except the
 * accounts' email verification: the link is in the outbox, sealed, so the
 * accounts are registered and verified with the domain functions before the
 * service starts (as bench/servers/auth-server.ts does for its one account).
 */

export interface Session {
  token: string;
  /** Requests using it right now: a retired session is logged out only once none is. */
  inFlight: number;
  /** Taken out of the user's sessions: no new request uses it, and it is logged out once inFlight is 0. */
  retired?: boolean;
}

export interface User {
  email: string;
  password: string;
  /** The end user's address, passed in the body as the products do (each user its own: the per-IP sign-in bucket stays honest). */
  ip: string;
  /** Oldest first. */
  sessions: Session[];
  pat: string;
}

export interface Family {
  user: User;
  client: OAuthUser;
  accessToken: string;
  refreshToken: string;
  /** A refresh is in flight: refresh tokens rotate, so a family is refreshed one request at a time. */
  busy: boolean;
}

export interface Tenant {
  name: string;
  apiKey: string;
}

export interface Population {
  users: User[];
  families: Family[];
  tenants: Tenant[];
}

const PASSWORD = 'soak password 0123456789';
/** Users' addresses: TEST-NET-2 (RFC 5737). */
const userIp = (i: number) => `198.51.100.${10 + (i % 240)}`;

/** Registers and verifies `count` accounts in the service's database, the service not yet running. */
export async function seedAccounts(env: Record<string, string>, runId: string, count: number): Promise<Omit<User, 'sessions' | 'pat'>[]> {
  const config = loadAuthConfig(env);
  const service = await createAuthService(config);
  const { deps } = service;
  const users = Array.from({ length: count }, (_, i) => ({ email: `soak-${runId}-${i}@example.com`, password: PASSWORD, ip: userIp(i) }));
  try {
    // Four at a time: bcrypt runs on libuv's four threads.
    for (let i = 0; i < users.length; i += 4) {
      await Promise.all(users.slice(i, i + 4).map((u) => register(deps, u)));
    }
    const mails = await deps.db
      .selectFrom('outbox')
      .select(['id', 'recipient', 'text_body'])
      .where('kind', '=', 'verify_email')
      .where(
        'recipient',
        'in',
        users.map((u) => u.email),
      )
      .execute();
    for (const mail of mails) {
      const text = openBody([config.encryptionKey], mail.id, 'text', mail.text_body);
      const token = /[?&]token=([^\s&]+)/.exec(text)?.[1];
      if (!token) throw new Error(`no verification link in the email to ${mail.recipient}`);
      await verifyEmail(deps, decodeURIComponent(token));
    }
    if (mails.length !== users.length) throw new Error(`${mails.length} verification emails for ${users.length} accounts`);
  } finally {
    await service.close();
  }
  return users;
}

export const loginBody = (u: Pick<User, 'email' | 'password' | 'ip'>, password = u.password) =>
  JSON.stringify({ email: u.email, password, ip: u.ip, user_agent: 'soak/1 (bench/soak)' });

/** Over the running service: a session and a personal access token per user, and `familyCount` OAuth families. */
export async function signIn(
  auth: Origin,
  apiKey: string,
  seeded: Omit<User, 'sessions' | 'pat'>[],
  familyCount: number,
): Promise<{ users: User[]; families: Family[] }> {
  const users: User[] = [];
  for (let i = 0; i < seeded.length; i += 4) {
    const batch = await Promise.all(
      seeded.slice(i, i + 4).map(async (u) => {
        const headers = { 'content-type': 'application/json', 'x-api-key': apiKey };
        const login = json<{ session_token: string }>(await auth.expect(200, 'POST', '/v1/login', headers, loginBody(u)));
        const pat = json<{ token: string }>(
          await auth.expect(
            201,
            'POST',
            '/v1/tokens',
            { ...headers, authorization: `Bearer ${login.session_token}` },
            JSON.stringify({ name: 'soak agent', scope: 'identity' }),
          ),
        );
        return { ...u, sessions: [{ token: login.session_token, inFlight: 0 }], pat: pat.token };
      }),
    );
    users.push(...batch);
  }
  const families: Family[] = [];
  for (const user of users.slice(0, familyCount)) {
    const client = await OAuthUser.register(auth.url, user);
    const tokens = await client.authorize();
    families.push({ user, client, accessToken: tokens.access_token, refreshToken: tokens.refresh_token, busy: false });
  }
  return { users, families };
}

/** Over the running gateway: `count` workspaces, each with its default API key and an OpenAI key whose base_url is the fake provider. */
export async function createTenants(gateway: Origin, runId: string, fakeUrl: string, count: number): Promise<Tenant[]> {
  const tenants: Tenant[] = [];
  for (let i = 0; i < count; i++) {
    const name = `Soak ${i}`;
    const signup = json<{ api_key: string; session_token: string }>(
      await gateway.expect(
        201,
        'POST',
        '/api/v1/signup',
        { 'content-type': 'application/json' },
        JSON.stringify({ name, email: `soak-${runId}-tenant-${i}@example.com` }),
      ),
    );
    const control = { 'content-type': 'application/json', authorization: `Bearer ${signup.session_token}` };
    await gateway.expect(
      201,
      'POST',
      '/api/v1/tenant/provider-keys',
      control,
      JSON.stringify({ provider: 'openai', key: 'sk-soak-fake-provider', base_url: `${fakeUrl}/v1` }),
    );
    // The first workspace has limits, so each of its calls is estimated, reserved and settled (docs/gateway-budgets.md);
    // they are high enough never to refuse at the soak's rates.
    if (i === 0) {
      await gateway.expect(
        200,
        'PATCH',
        '/api/v1/tenant',
        control,
        JSON.stringify({ settings: { limits: { requests_per_minute: 100_000, tokens_per_day: 1_000_000_000, usd_per_month: 100_000 } } }),
      );
    }
    tenants.push({ name, apiKey: signup.api_key });
  }
  return tenants;
}

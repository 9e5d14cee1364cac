import { createServer, type AddressInfo } from 'node:net';
import { loadAuthConfig } from '../../src/auth/config.ts';
import { type AuthService, createAuthService } from '../../src/auth/service.ts';
import { ManualClock } from '../../src/platform/clock.ts';
import { freshDatabase, type TestDatabase } from './database.ts';
import type { DbKind } from './env.ts';
import { CERT_FILE, type ReceivedMail, startSmtpServer, type TestSmtpServer } from './smtp.ts';

export const API_KEY = 'test-api-key-0123456789-abcdefghijklmnop';
export const PASSWORD = 'correct horse battery staple';

export interface Reply {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: test replies are inspected field by field
  body: any;
  text: string;
}

export interface TestAuth {
  url: string;
  clock: ManualClock;
  service: AuthService;
  smtp: TestSmtpServer;
  database: TestDatabase;
  /** A request over HTTP; sends X-Api-Key unless `key` is false, a JSON body when `body` is set. */
  request(
    method: string,
    path: string,
    options?: { body?: unknown; rawBody?: string; headers?: Record<string, string>; key?: string | false; token?: string },
  ): Promise<Reply>;
  /** Registers an account; returns its email. */
  register(email?: string, ip?: string): Promise<string>;
  /** The verification email sent to `email` (waits for it). */
  verificationMail(email: string): Promise<ReceivedMail>;
  /** Registers, verifies and returns the credentials. */
  verifiedAccount(email?: string): Promise<{ email: string; password: string }>;
  /** Logs in and returns the session token. */
  login(email: string, password?: string, ip?: string): Promise<string>;
  close(): Promise<void>;
}

let counter = 0;
export const uniqueEmail = () => `user${process.pid}.${++counter}@example.com`;

/**
 * Starts the real account service on a free port, on a fresh database of
 * `db`'s kind (or on a database the test prepared), sending mail over
 * STARTTLS to a real SMTP server, with a clock the test moves by hand.
 */
export async function startTestAuth(db: DbKind | TestDatabase, env: Record<string, string> = {}, smtp?: TestSmtpServer): Promise<TestAuth> {
  const database = typeof db === 'string' ? await freshDatabase(db) : db;
  const mailServer = smtp ?? (await startSmtpServer());
  const clock = new ManualClock(Date.now());
  // The issuer (AUTH_BASE_URL) must be the URL the service answers on, so pick the port first.
  const port = await freePort();
  const config = loadAuthConfig({
    AUTH_BASE_URL: `http://127.0.0.1:${port}`,
    DATA_DIR: database.dataDir,
    AUTH_API_KEY: API_KEY,
    AUTH_BCRYPT_COST: '4',
    LOG_LEVEL: 'silent',
    SMTP_HOST: 'localhost',
    SMTP_PORT: String(mailServer.port),
    SMTP_TLS_CA: CERT_FILE,
    SMTP_FROM: 'Accounts <accounts@example.com>',
    AUTH_MAIL_POLL_MS: '50',
    ...(database.url ? { AUTH_DATABASE_URL: database.url } : {}),
    ...env,
  });
  const service = await createAuthService(config, { clock, processMetrics: false });
  service.startWorkers();
  await service.app.listen({ host: '127.0.0.1', port });
  const url = `http://127.0.0.1:${port}`;

  const auth: TestAuth = {
    url,
    clock,
    service,
    smtp: mailServer,
    database,
    async request(method, path, options = {}) {
      const headers: Record<string, string> = { ...options.headers };
      if (options.key !== false) headers['x-api-key'] = options.key ?? API_KEY;
      if (options.token) headers['authorization'] = `Bearer ${options.token}`;
      let body: string | undefined = options.rawBody;
      if (options.body !== undefined) {
        body = JSON.stringify(options.body);
        headers['content-type'] ??= 'application/json';
      }
      const res = await fetch(url + path, { method, headers, body, redirect: 'manual' });
      const text = await res.text();
      let parsed: unknown = text;
      if (/json/.test(res.headers.get('content-type') ?? '') && text) parsed = JSON.parse(text);
      return { status: res.status, headers: res.headers, body: parsed, text };
    },
    async register(email = uniqueEmail(), ip = '198.51.100.1') {
      const r = await auth.request('POST', '/v1/register', { body: { email, password: PASSWORD, ip } });
      if (r.status !== 201) throw new Error(`register failed: ${r.status} ${r.text}`);
      return email;
    },
    verificationMail(email) {
      return mailServer.waitFor((m) => m.to.includes(email) && m.subject.includes('Confirm'));
    },
    async verifiedAccount(email = uniqueEmail()) {
      await auth.register(email);
      const token = tokenFromMail(await auth.verificationMail(email));
      const r = await auth.request('POST', '/v1/verify', { body: { token } });
      if (r.status !== 200) throw new Error(`verify failed: ${r.status} ${r.text}`);
      return { email, password: PASSWORD };
    },
    async login(email, password = PASSWORD, ip = '198.51.100.2') {
      const r = await auth.request('POST', '/v1/login', { body: { email, password, ip } });
      if (r.status !== 200) throw new Error(`login failed: ${r.status} ${r.text}`);
      return r.body.session_token as string;
    },
    async close() {
      await service.close();
      if (!smtp) await mailServer.close();
      await database.drop();
    },
  };
  return auth;
}

/** The token in a verification email's link. */
export function tokenFromMail(mail: ReceivedMail): string {
  const link = /https?:\/\/\S+/.exec(mail.text)?.[0];
  const token = link ? new URL(link).searchParams.get('token') : null;
  if (!token) throw new Error(`no token in email: ${mail.text}`);
  return token;
}

/** A port that was free a moment ago (the kernel hands out a fresh one; reused at once). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

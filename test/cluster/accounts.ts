import assert from 'node:assert/strict';
import { API_KEY, PASSWORD, type Reply, tokenFromMail } from '../helpers/auth.ts';
import type { TestDatabase } from '../helpers/database.ts';
import { Browser, pkce, STATIC_CLIENT_ID, STATIC_CLIENT_SECRET } from '../helpers/oauth.ts';
import { CERT_FILE, type TestSmtpServer } from '../helpers/smtp.ts';
import { clusterRedisUrl, freshIp, type Replica } from './replicas.ts';

/**
 * The account service's replicas as a product reaches them: through an edge
 * that adds X-Api-Key and the client's address (X-Forwarded-For, believed
 * from 127.0.0.1 only), in front of a public URL that is not any replica's.
 * Each call names the replica it goes to, so a test decides which replica
 * serves which step.
 */

/** AUTH_BASE_URL: the issuer, and the origin of every page and redirect, whichever replica answers. */
export const ISSUER = 'https://accounts.example';
/** A dynamically registered client's redirect URI (a native app's loopback listener). */
export const CALLBACK = 'http://127.0.0.1:7777/cb';

export type Who = { email: string; password: string };
export type Tokens = { access_token: string; refresh_token: string };

/** Production settings (NODE_ENV=production: every secret given, bcrypt at cost 12) on the shared database and Redis. */
export function accountServiceEnv(db: TestDatabase, smtp: TestSmtpServer, extra: Record<string, string> = {}): Record<string, string> {
  return {
    NODE_ENV: 'production',
    LOG_LEVEL: 'debug',
    AUTH_DATABASE_URL: db.url!,
    REDIS_URL: clusterRedisUrl(),
    AUTH_BASE_URL: ISSUER,
    AUTH_API_KEY: API_KEY,
    AUTH_ENCRYPTION_KEY: 'c'.repeat(64),
    AUTH_TRUST_PROXY: '127.0.0.1',
    SMTP_HOST: 'localhost',
    SMTP_PORT: String(smtp.port),
    SMTP_TLS_CA: CERT_FILE,
    AUTH_MAIL_POLL_MS: '100',
    OAUTH_CLIENT_ID: STATIC_CLIENT_ID,
    OAUTH_CLIENT_SECRET: STATIC_CLIENT_SECRET,
    OAUTH_CLIENT_REDIRECT_URIS: 'https://product.example/callback',
    ...extra,
  };
}

let counter = 0;

export class AccountsEdge {
  readonly smtp: TestSmtpServer;
  /** The end user's address, as the edge forwards it. */
  readonly ip = freshIp();
  readonly #browsers = new Map<string, Browser>();

  constructor(smtp: TestSmtpServer) {
    this.smtp = smtp;
  }

  /** One request to one replica, as the edge forwards it. */
  async request(
    replica: Replica,
    method: string,
    path: string,
    options: { json?: unknown; form?: Record<string, string>; token?: string } = {},
  ): Promise<Reply> {
    const headers: Record<string, string> = { 'x-api-key': API_KEY, 'x-forwarded-for': this.ip };
    if (options.token) headers['authorization'] = `Bearer ${options.token}`;
    let body: string | undefined;
    if (options.json !== undefined) {
      body = JSON.stringify(options.json);
      headers['content-type'] = 'application/json';
    } else if (options.form) {
      body = new URLSearchParams(options.form).toString();
      headers['content-type'] = 'application/x-www-form-urlencoded';
    }
    const res = await fetch(replica.url + path, { method, headers, body, redirect: 'manual' });
    const text = await res.text();
    return { status: res.status, headers: res.headers, text, body: /json/.test(res.headers.get('content-type') ?? '') && text ? JSON.parse(text) : text };
  }

  /** Registers on `registerOn`, follows the emailed link on `verifyOn`. */
  async verifiedAccount(registerOn: Replica, verifyOn: Replica): Promise<Who> {
    const email = `cluster${process.pid}.${++counter}@example.com`;
    const registered = await this.request(registerOn, 'POST', '/v1/register', { json: { email, password: PASSWORD, ip: freshIp() } });
    assert.equal(registered.status, 201, registered.text);
    const mail = await this.smtp.waitFor((m) => m.to.includes(email) && m.subject.includes('Confirm'));
    const verified = await this.request(verifyOn, 'POST', '/v1/verify', { json: { token: tokenFromMail(mail) } });
    assert.equal(verified.status, 200, verified.text);
    return { email, password: PASSWORD };
  }

  login(replica: Replica, who: Who, ip = freshIp()): Promise<Reply> {
    return this.request(replica, 'POST', '/v1/login', { json: { email: who.email, password: who.password, ip } });
  }

  /** RFC 7591 registration of a public client; returns its client_id. */
  async registerClient(replica: Replica): Promise<string> {
    const r = await this.request(replica, 'POST', '/oauth/register', { json: { redirect_uris: [CALLBACK], client_name: 'Cluster agent' } });
    assert.equal(r.status, 201, r.text);
    return r.body.client_id as string;
  }

  /**
   * The authorization request walked through the pages by the user's browser,
   * each step served by the next replica in `route` (a load balancer without
   * stickiness): the pending request, the browser session and the consent
   * are shared through the database, or the walk breaks. Returns the code
   * and its PKCE verifier.
   */
  async code(who: Who, clientId: string, route: Replica[]): Promise<{ code: string; verifier: string }> {
    const { verifier, challenge } = await pkce();
    const state = `s${++counter}`;
    const query = new URLSearchParams({ client_id: clientId, redirect_uri: CALLBACK, response_type: 'code', scope: 'identity', state, code_challenge: challenge, code_challenge_method: 'S256' });
    const browser = this.#browsers.get(who.email) ?? new Browser(true);
    this.#browsers.set(who.email, browser);
    const headers = { 'x-forwarded-for': this.ip };
    let turn = 0;
    const at = (pathAndQuery: string) => `${route[turn++ % route.length]!.url}${pathAndQuery}`;

    let next = await browser.request(at(`/oauth/authorize?${query}`), { headers });
    for (let step = 0; step < 6; step++) {
      assert.ok(next.status === 302 || next.status === 303, `step ${step}: expected a redirect, got ${next.status}: ${next.text.slice(0, 300)}`);
      const location = new URL(next.location!);
      if (location.origin === ISSUER && (location.pathname === '/oauth/login' || location.pathname === '/oauth/consent')) {
        const page = await browser.request(at(location.pathname + location.search), { headers });
        assert.equal(page.status, 200, `${location.pathname}: ${page.text.slice(0, 300)}`);
        const answer: Record<string, string> = location.pathname === '/oauth/login' ? { email: who.email, password: who.password } : { decision: 'approve' };
        next = await browser.request(at(location.pathname), { form: { ...Browser.fields(page.text), ...answer }, headers });
        continue;
      }
      assert.equal(`${location.origin}${location.pathname}`, CALLBACK);
      assert.equal(location.searchParams.get('iss'), ISSUER);
      assert.equal(location.searchParams.get('state'), state);
      const code = location.searchParams.get('code');
      assert.ok(code, `no code in ${location}`);
      return { code, verifier };
    }
    throw new Error('too many redirects');
  }

  /** The code flow to its end: the code is exchanged on `exchangeOn`. */
  async tokens(who: Who, clientId: string, route: Replica[], exchangeOn: Replica): Promise<Tokens> {
    const { code, verifier } = await this.code(who, clientId, route);
    const r = await this.exchange(exchangeOn, clientId, code, verifier);
    assert.equal(r.status, 200, r.text);
    return r.body as Tokens;
  }

  exchange(replica: Replica, clientId: string, code: string, verifier: string): Promise<Reply> {
    return this.request(replica, 'POST', '/oauth/token', {
      form: { grant_type: 'authorization_code', client_id: clientId, code, redirect_uri: CALLBACK, code_verifier: verifier },
    });
  }

  refresh(replica: Replica, clientId: string, refreshToken: string): Promise<Reply> {
    return this.request(replica, 'POST', '/oauth/token', { form: { grant_type: 'refresh_token', client_id: clientId, refresh_token: refreshToken } });
  }

  /** GET /oauth/userinfo: 200 for a live access token (or PAT), 401 for a dead one. */
  async userinfo(replica: Replica, token: string): Promise<number> {
    return (await this.request(replica, 'GET', '/oauth/userinfo', { token })).status;
  }
}

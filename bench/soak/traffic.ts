import { type Answer, Failure, json, type Origin } from './http.ts';
import type { Family, Population, Session, Tenant, User } from './population.ts';
import { loginBody } from './population.ts';
import { cacheStatus, chatBody, checkCompletion, checkStream, pickQuestion } from './prompts.ts';

/**
 * The mix: each kind of traffic with its rate (requests a second at scale
 * 1, Poisson arrivals) and what one request of it does and checks. A
 * request resolves with the series its latency belongs to ("chat hit"), or
 * throws a Failure; `measure` times it and records either. Logouts have no
 * rate of their own: each login beyond a user's second live session retires
 * the oldest one, logged out once no request is using it.
 */
export interface Context {
  auth: Origin;
  gateway: Origin;
  apiKey: string;
  population: Population;
  random: () => number;
  runId: string;
  /** 0, 1, 2...: makes each new question unique in the run. */
  nextSerial(): number;
  /** Times `request` and records its series and latency, or its failure under `kind`. */
  measure(kind: string, request: () => Promise<Sent> | undefined): Promise<void>;
}

/** What a request that went right reports. */
export interface Sent {
  series: string;
  /** Streams: time to the first event. */
  ttfbMs?: number;
  /** Gateway calls: X-Gateway-Cache. */
  cache?: 'hit' | 'miss' | 'dedup';
}

export interface TrafficKind {
  name: string;
  service: 'auth' | 'gateway';
  perSecond: number;
  /** One line for the report. */
  what: string;
  /** Resolves with undefined when there was nothing to send (every OAuth family busy refreshing). */
  send(ctx: Context): Promise<Sent> | undefined;
}

/** Share of logins with a mistyped password (answered 401 invalid_credentials, which is right, not an error). */
const TYPO_SHARE = 0.05;
/** Live sessions a user keeps (phone and laptop); a third login logs the oldest out. */
const SESSIONS_KEPT = 2;
/** Gateway calls asking a popular question, word for word. */
const POPULAR_SHARE = 0.4;

const pick = <T>(random: () => number, items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
const authHeaders = (ctx: Context, bearer?: string): Record<string, string> => ({
  'x-api-key': ctx.apiKey,
  ...(bearer ? { authorization: `Bearer ${bearer}` } : {}),
});

function checkUser(answer: Answer, email: string, path: (body: Record<string, unknown>) => unknown): void {
  const body = json<Record<string, unknown>>(answer);
  if (path(body) !== email) throw new Failure('bad answer', `expected ${email}: ${answer.text.slice(0, 200)}`);
}

async function login(ctx: Context): Promise<Sent> {
  const user = pick(ctx.random, ctx.population.users);
  if (ctx.random() < TYPO_SHARE) {
    const answer = await ctx.auth.expect(
      401,
      'POST',
      '/v1/login',
      { ...authHeaders(ctx), 'content-type': 'application/json' },
      loginBody(user, `${user.password}x`),
    );
    if (json<{ code?: string }>(answer).code !== 'invalid_credentials') throw new Failure('bad answer', answer.text.slice(0, 200));
    return { series: 'login' };
  }
  const answer = await ctx.auth.expect(200, 'POST', '/v1/login', { ...authHeaders(ctx), 'content-type': 'application/json' }, loginBody(user));
  const body = json<{ session_token?: string; user?: { email?: string } }>(answer);
  if (!body.session_token?.startsWith('ses_') || body.user?.email !== user.email) throw new Failure('bad answer', answer.text.slice(0, 200));
  user.sessions.push({ token: body.session_token, inFlight: 0 });
  if (user.sessions.length > SESSIONS_KEPT) retire(ctx, user.sessions.shift()!);
  return { series: 'login' };
}

/** Logs a session out once no request is using it (a /v1/me racing its own logout would be a 401 of the soak's making). */
function retire(ctx: Context, session: Session): void {
  session.retired = true;
  if (session.inFlight === 0) logout(ctx, session);
}

function logout(ctx: Context, session: Session): void {
  void ctx.measure('logout', async () => {
    await ctx.auth.expect(204, 'POST', '/v1/logout', authHeaders(ctx, session.token));
    return { series: 'logout' };
  });
}

async function me(ctx: Context): Promise<Sent> {
  const user = pick(ctx.random, ctx.population.users);
  const session = pick(ctx.random, user.sessions);
  session.inFlight++;
  try {
    const answer = await ctx.auth.expect(200, 'GET', '/v1/me', authHeaders(ctx, session.token));
    checkUser(answer, user.email, (b) => (b['user'] as { email?: string } | undefined)?.email);
  } finally {
    session.inFlight--;
    if (session.retired && session.inFlight === 0) logout(ctx, session);
  }
  return { series: 'me' };
}

/** An agent's call with the user's personal access token, or an OAuth client's with its latest access token. */
async function userinfo(ctx: Context): Promise<Sent> {
  let user: User;
  let token: string;
  if (ctx.random() < 0.5) {
    user = pick(ctx.random, ctx.population.users);
    token = user.pat;
  } else {
    const family = pick(ctx.random, ctx.population.families);
    user = family.user;
    token = family.accessToken;
  }
  const answer = await ctx.auth.expect(200, 'GET', '/oauth/userinfo', { authorization: `Bearer ${token}` });
  checkUser(answer, user.email, (b) => b['email']);
  return { series: 'userinfo' };
}

function refresh(ctx: Context): Promise<Sent> | undefined {
  const idle = ctx.population.families.filter((f) => !f.busy);
  if (idle.length === 0) return undefined;
  const family = pick(ctx.random, idle);
  family.busy = true;
  return refreshFamily(ctx, family).finally(() => {
    family.busy = false;
  });
}

async function refreshFamily(ctx: Context, family: Family): Promise<Sent> {
  const form = new URLSearchParams({ grant_type: 'refresh_token', refresh_token: family.refreshToken, client_id: family.client.clientId });
  let answer: Answer;
  try {
    answer = await ctx.auth.expect(200, 'POST', '/oauth/token', { 'content-type': 'application/x-www-form-urlencoded' }, form.toString());
  } catch (err) {
    // The refresh token may or may not have rotated: start the family again (a new authorization, on the browser's
    // session), so that one failure is counted once and does not revoke the family at every later refresh.
    const tokens = await family.client.authorize();
    family.accessToken = tokens.access_token;
    family.refreshToken = tokens.refresh_token;
    throw err;
  }
  const tokens = json<{ access_token?: string; refresh_token?: string }>(answer);
  if (!tokens.access_token?.startsWith('oat_') || !tokens.refresh_token?.startsWith('ort_')) throw new Failure('bad answer', answer.text.slice(0, 200));
  family.accessToken = tokens.access_token;
  family.refreshToken = tokens.refresh_token;
  return { series: 'refresh' };
}

async function chat(ctx: Context, stream: boolean): Promise<Sent> {
  const tenant: Tenant = pick(ctx.random, ctx.population.tenants);
  const question = pickQuestion(ctx.random, POPULAR_SHARE, ctx.nextSerial(), ctx.runId);
  const answer = await ctx.gateway.expect(
    200,
    'POST',
    '/v1/chat/completions',
    { 'content-type': 'application/json', authorization: `Bearer ${tenant.apiKey}` },
    chatBody(question, stream),
  );
  const cache = cacheStatus(answer, question);
  if (stream) checkStream(answer, question);
  else checkCompletion(answer, question);
  // dedup joined a call still upstream: its latency is a miss's.
  const series = `${stream ? 'stream' : 'chat'} ${cache === 'hit' ? 'hit' : 'miss'}`;
  return { series, cache, ...(stream ? { ttfbMs: answer.ttfbMs } : {}) };
}

export const MIX: readonly TrafficKind[] = [
  {
    name: 'login',
    service: 'auth',
    perSecond: 0.5,
    what: `POST /v1/login (bcrypt, cost 12), ${100 * TYPO_SHARE} % with a mistyped password (401 expected); a user's third live session logs the oldest out (POST /v1/logout)`,
    send: login,
  },
  { name: 'me', service: 'auth', perSecond: 15, what: 'GET /v1/me with one of the user’s live sessions', send: me },
  {
    name: 'userinfo',
    service: 'auth',
    perSecond: 5,
    what: 'GET /oauth/userinfo, half with the user’s personal access token, half with an OAuth access token',
    send: userinfo,
  },
  {
    name: 'refresh',
    service: 'auth',
    perSecond: 2,
    what: 'POST /oauth/token, grant refresh_token, on one of the OAuth families (rotating its refresh token)',
    send: refresh,
  },
  {
    name: 'chat',
    service: 'gateway',
    perSecond: 8,
    what: `POST /v1/chat/completions, not streamed; ${100 * POPULAR_SHARE} % ask a popular question word for word (cache hits), the rest new ones (misses)`,
    send: (ctx) => chat(ctx, false),
  },
  {
    name: 'stream',
    service: 'gateway',
    perSecond: 4,
    what: 'the same, streamed (`stream: true` with `include_usage`)',
    send: (ctx) => chat(ctx, true),
  },
];

/** Every series a run can report, in the order of the tables and the plot's legend. */
export const SERIES = ['login', 'logout', 'me', 'userinfo', 'refresh', 'chat hit', 'chat miss', 'stream hit', 'stream miss'] as const;
export const AUTH_SERIES: readonly string[] = ['login', 'logout', 'me', 'userinfo', 'refresh'];
export const GATEWAY_SERIES: readonly string[] = ['chat hit', 'chat miss', 'stream hit', 'stream miss'];

import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { consoleBenchmark } from './benchmarks/console-pages.ts';
import { gatewayComparison } from './benchmarks/gateway.ts';
import { gatewayBeforeAfter } from './benchmarks/gateway-before-after.ts';
import { gatewayBreakdown } from './benchmarks/gateway-breakdown.ts';
import { gatewayCache } from './benchmarks/gateway-cache.ts';
import { embeddingsBenchmark } from './benchmarks/gateway-embeddings.ts';
import { hostileBenchmark } from './benchmarks/gateway-hostile.ts';
import { compactionBenchmark } from './benchmarks/gateway-compaction.ts';
import { routingBenchmark } from './benchmarks/gateway-routing.ts';
import { gatewaySavings } from './benchmarks/gateway-savings.ts';
import { messagesBenchmark } from './benchmarks/gateway-messages.ts';
import { responsesBenchmark } from './benchmarks/gateway-responses.ts';
import { loginAndLatency } from './benchmarks/login.ts';
import { oauthThroughput } from './benchmarks/oauth.ts';
import { meThroughput } from './benchmarks/throughput.ts';
import { type ChildServer, startServer } from './lib/children.ts';
import { call, fmt, log } from './lib/format.ts';
import { OAuthUser, REDIRECT_URI } from './lib/oauth-flow.ts';
import { markdown, type Section, sectionMarkdown, textTable } from './lib/report.ts';
import type { AuthInfo } from './servers/auth-info.ts';

/**
 * `npm run bench`: the four benchmarks of docs/BENCHMARKS.md, each judged
 * against a baseline measured in this same run. Prints a table, rewrites
 * docs/BENCHMARKS.md, exits 0 whether or not the targets are met (1 only when
 * the bench itself could not run).
 *
 * `npm run bench -- login me oauth` (any of them) runs only those groups
 * (login: benchmarks 1 and 2; me: 3; oauth: 4) and prints their table
 * without rewriting docs/BENCHMARKS.md, which holds whole runs only.
 * `npm run bench -- gateway` runs the gateway comparison and the
 * services' idle memory (bench/benchmarks/gateway.ts); `breakdown` the
 * gateway's CPU per call with every stage, with none, and with none and no
 * usage journal, beside the floor (bench/benchmarks/gateway-breakdown.ts);
 * `before-after` the gateway against an earlier commit of itself, three
 * interleaved A/B runs (bench/benchmarks/gateway-before-after.ts). The gateway's
 * pipeline parts run on their own: `compaction` (prompt compaction on the
 * transcript corpus, in process: bench/benchmarks/gateway-compaction.ts) and
 * `savings` (what the gateway saves on the corpus:
 * bench/benchmarks/gateway-savings.ts), `cache` (cache hits against misses,
 * dedup: bench/benchmarks/gateway-cache.ts), `routing` (the classifier on a
 * labelled prompt set: bench/benchmarks/gateway-routing.ts). `console` (the
 * console's pages and the usage and request-log queries on a million usage
 * records, SQLite and, with TEST_POSTGRES_URL, PostgreSQL:
 * bench/benchmarks/console-pages.ts) has its own section and table.
 * `hostile` (hostile request content through every stage, the gateway's
 * longest event-loop stall per input: bench/benchmarks/gateway-hostile.ts).
 * `messages` (/v1/messages against /v1/chat/completions to the same fake
 * Anthropic model, streamed and not, beside the fake and the Node floor:
 * bench/benchmarks/gateway-messages.ts) has its own section and table, and so
 * have `responses` (/v1/responses against /v1/chat/completions to the same
 * OpenAI model, and previous_response_id chains of 10 and 100 turns against
 * the same input inline: bench/benchmarks/gateway-responses.ts) and
 * `embeddings` (64 inputs through the gateway with 0 %, 50 % and 100 % of
 * them cached, against the fake called directly:
 * bench/benchmarks/gateway-embeddings.ts); a run of parts keeps each
 * section's markdown in last-run.json (`sections`).
 */
const PARTS = ['login', 'me', 'oauth', 'gateway', 'breakdown', 'before-after', 'cache', 'compaction', 'routing', 'savings', 'console', 'hostile', 'messages', 'responses', 'embeddings'] as const;
type Part = (typeof PARTS)[number];
const WHOLE: readonly Part[] = PARTS;
/** Parts that need no account-service servers. */
const GATEWAY_ONLY: ReadonlySet<Part> = new Set(['breakdown', 'before-after', 'cache', 'compaction', 'routing', 'savings', 'console', 'hostile', 'messages', 'responses', 'embeddings']);
const asked = process.argv.slice(2);
for (const a of asked) {
  if (!(PARTS as readonly string[]).includes(a)) {
    process.stderr.write(`bench: unknown part "${a}"; parts: ${PARTS.join(', ')}\n`);
    process.exit(1);
  }
}
const parts = new Set<Part>(asked.length ? (asked as Part[]) : WHOLE);
const whole = parts.size === WHOLE.length && WHOLE.every((p) => parts.has(p));
const authParts = WHOLE.some((p) => !GATEWAY_ONLY.has(p) && parts.has(p));

const CORES = availableParallelism();
// The gateway part sends 100,000 requests through each target, Portkey's at about 1k/s.
// console: seeding (here SQLite about 75 s, PostgreSQL about 150 s) and up to 8 s per page and query, on each database.
const PART_LIMIT_MS: Partial<Record<Part, number>> = {
  gateway: 420_000,
  breakdown: 240_000,
  'before-after': 600_000,
  cache: 90_000,
  compaction: 180_000,
  routing: 60_000,
  savings: 300_000,
  console: process.env['TEST_POSTGRES_URL'] ? 1_500_000 : 600_000,
  hostile: 300_000,
  // Three runs of two loads over ten lanes: about 260 s each here.
  messages: 1_200_000,
  // Three runs of three loads (eight, four and four lanes) and 110 stored turns: about 160 s each here.
  responses: 720_000,
  // Three runs of four lanes: about 60 s each here.
  embeddings: 400_000,
};
const TIME_LIMIT_MS = (authParts ? 175_000 : 0) + [...parts].reduce((sum, p) => sum + (PART_LIMIT_MS[p] ?? 0), 0);

const ROOT = new URL('../', import.meta.url);
const DOC = new URL('docs/BENCHMARKS.md', ROOT);
const RAW = new URL('bench/results/last-run.json', ROOT);

async function main(servers: ChildServer<unknown>[], dataDir: string) {
  const gateway = parts.has('gateway') ? await gatewayComparison() : undefined;
  const breakdown = parts.has('breakdown') ? await gatewayBreakdown() : undefined;
  const beforeAfter = parts.has('before-after') ? await gatewayBeforeAfter() : undefined;
  const cache = parts.has('cache') ? await gatewayCache() : undefined;
  const routing = parts.has('routing') ? await routingBenchmark() : undefined;
  const savings = parts.has('savings') ? await gatewaySavings() : undefined;
  const auth = authParts ? await authBenchmarks(servers, dataDir) : undefined;
  const compaction = parts.has('compaction') ? await compactionBenchmark() : undefined;
  const consolePages = parts.has('console') ? await consoleBenchmark() : undefined;
  const hostile = parts.has('hostile') ? await hostileBenchmark() : undefined;
  const messages = parts.has('messages') ? await messagesBenchmark() : undefined;
  const responses = parts.has('responses') ? await responsesBenchmark() : undefined;
  const embeddings = parts.has('embeddings') ? await embeddingsBenchmark() : undefined;
  const results = [auth, gateway, breakdown, beforeAfter, cache, compaction, routing, savings, consolePages, hostile, messages, responses, embeddings];
  const sections: Section[] = [consolePages?.section, messages?.section, responses?.section, embeddings?.section].filter((s) => s !== undefined);
  return {
    rows: results.flatMap((r) => r?.rows ?? []),
    details: results.flatMap((r) => r?.details ?? []),
    raw: Object.assign({}, ...results.map((r) => r?.raw)),
    sections,
  };
}

async function authBenchmarks(servers: ChildServer<unknown>[], dataDir: string) {
  const apiKey = randomBytes(32).toString('base64url');
  log('starting the servers');
  const [auth, bare] = await Promise.all([
    startServer<AuthInfo>('auth', new URL('servers/auth-server.ts', import.meta.url), {
      DATA_DIR: dataDir,
      AUTH_API_KEY: apiKey,
      AUTH_LIMIT_LOGIN: '1000000/60',
      LOG_LEVEL: 'warn',
      // OAuth on, its endpoints public (no X-Api-Key), as for agents and desktop clients.
      OAUTH_CLIENT_ID: 'bench-web',
      OAUTH_CLIENT_SECRET: randomBytes(32).toString('base64url'),
      OAUTH_CLIENT_REDIRECT_URIS: REDIRECT_URI,
      OAUTH_PUBLIC_ENDPOINTS: 'true',
    }),
    startServer<{ url: string }>('bare', new URL('servers/bare-fastify.ts', import.meta.url), {}),
  ]);
  servers.push(auth, bare);

  const { url, email, password } = auth.info;
  const signIn = await call(`${url}/v1/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
    body: JSON.stringify({ email, password, ip: '198.51.100.7' }),
  });
  if (signIn.status !== 200) throw new Error(`sign-in failed: ${signIn.status} ${signIn.body}`);
  const meHeaders = { 'x-api-key': apiKey, authorization: `Bearer ${JSON.parse(signIn.body).session_token}` };
  const me = await call(`${url}/v1/me`, { headers: meHeaders });
  if (me.status !== 200) throw new Error(`/v1/me failed: ${me.status} ${me.body}`);
  const bareCheck = await call(`${bare.info.url}/`);
  if (bareCheck.body !== '{"ok":true}') throw new Error(`bare server answered ${bareCheck.status} ${bareCheck.body}`);
  // The OAuth client and the browser session, before any load: a failure here stops the bench early.
  const oauthUser = parts.has('oauth') ? await OAuthUser.register(url, { email, password }) : undefined;
  await oauthUser?.authorize();

  const first = parts.has('login') ? await loginAndLatency(auth, apiKey, meHeaders) : undefined;
  const third = parts.has('me') ? await meThroughput(auth, bare, meHeaders) : undefined;
  const fourth = oauthUser ? await oauthThroughput(auth, bare, oauthUser) : undefined;
  return {
    rows: [...(first?.rows ?? []), ...(third ? [third.row] : []), ...(fourth?.rows ?? [])],
    details: [...(first?.details ?? []), ...(third?.details ?? []), ...(fourth?.details ?? [])],
    raw: { ...first?.raw, ...third?.raw, ...fourth?.raw },
  };
}

const started = performance.now();
const watchdog = setTimeout(() => {
  process.stderr.write(`bench: over its ${TIME_LIMIT_MS / 1000} s limit; stopping\n`);
  process.exit(1); // the exit hook of lib/children.ts kills the servers
}, TIME_LIMIT_MS);
watchdog.unref();
process.on('SIGINT', () => process.exit(130));

const dataDir = mkdtempSync(join(tmpdir(), 'auth-bench-'));
process.on('exit', () => rmSync(dataDir, { recursive: true, force: true }));
const servers: ChildServer<unknown>[] = [];
let exitCode = 0;
try {
  const { rows, details, raw, sections } = await main(servers, dataDir);
  const seconds = (performance.now() - started) / 1000;
  process.stdout.write(`\n${textTable(rows)}\n\n${details.map((d) => `- ${d}`).join('\n')}\n`);
  for (const s of sections) process.stdout.write(`\n${s.title}\n\n${textTable(s.rows)}\n\n${s.details.map((d) => `- ${d}`).join('\n')}\n`);
  const date = `${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC`;
  const machine = `${CORES} cores (${cpus()[0]?.model ?? 'unknown CPU'}), ${process.platform}`;
  mkdirSync(new URL('.', RAW), { recursive: true });
  writeFileSync(RAW, `${JSON.stringify({ date, node: process.version, machine, seconds, parts: [...parts], ...raw, sections: sections.map(sectionMarkdown) }, null, 2)}\n`);
  if (whole) {
    writeFileSync(DOC, markdown({ date, node: process.version, machine, cores: CORES, seconds, rows, details, sections }));
    log(`wrote docs/BENCHMARKS.md in ${fmt(seconds)} s`);
  } else {
    log(`ran ${[...parts].join(', ')} in ${fmt(seconds)} s; docs/BENCHMARKS.md left as it was (whole runs only)`);
  }
} catch (err) {
  process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  exitCode = 1;
} finally {
  await Promise.all(servers.map((s) => s.stop()));
}
process.exit(exitCode);

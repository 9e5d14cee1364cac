
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeCursor } from '../../src/gateway/usage/request-log.ts';
import { CERT_FILE, startSmtpServer, type TestSmtpServer } from '../../test/helpers/smtp.ts';
import { type ChildServer, startServer } from '../lib/children.ts';
import { checkTotals, freshSchema, SERVER, type Seeded, seed, signIn } from '../lib/console-setup.ts';
import { MAIN_TENANT, OTHER_TENANTS, SCALE } from '../lib/console-seed.ts';
import { cpuWindow } from '../lib/cpu.ts';
import { cpuText, fmt, log } from '../lib/format.ts';
import { percentile } from '../lib/load.ts';
import { rssMiB, rssPeak } from '../lib/memory.ts';
import type { Row, Section } from '../lib/report.ts';

/**
 * The console on a database holding a million usage records (bench/run.ts
 * part `console`), on SQLite and, when TEST_POSTGRES_URL is set, on
 * PostgreSQL too:
 * 1. seeding: bench/servers/console-server.ts in seed mode writes the
 *    records of bench/lib/console-seed.ts (one tenant with 1,000,000 over
 *    the last 30 days, four others with 200,000 between them) through the
 *    gateway's usage writer, into a fresh SQLite file or a fresh PostgreSQL
 *    schema (dropped afterwards); timed;
 * 2. the real gateway on that database (the same script, serve mode), signed
 *    in over HTTP as the console is: the sign-in form, the magic link
 *    emailed (over SMTP to a server in this process, test/helpers/smtp.ts),
 *    the link's page and its form, the session cookie; then the usage
 *    API's totals checked against what was seeded;
 * 3. every console page and the control-plane API's usage and request-log
 *    queries, one after another, each WARMUP times unmeasured then SAMPLES
 *    times (or as many as fit in BUDGET_MS, at least MIN_SAMPLES), one
 *    request at a time, timed from the send to the last byte: p50 and p95,
 *    against 200 ms; each page's p95 as a multiple of a page that reads no
 *    usage record, measured in the same run before and after the others
 *    (/api-keys for the console, /api/v1/tenant for the API; /healthz
 *    beside them); the gateway's RSS before and after.
 * A page the console does not have yet (404) is reported as such.
 */

const WARMUP = 3;
const SAMPLES = 30;
const MIN_SAMPLES = 5;
const BUDGET_MS = 8_000;
const TARGET_MS = 200;
const POSTGRES_URL = process.env['TEST_POSTGRES_URL'] || undefined;

type Kind = 'sqlite' | 'postgres';
type Group = 'console' | 'api' | 'baseline';

interface Endpoint {
  group: Group;
  path: string;
  /** What the page or query does, for the table. */
  what: string;
}

interface Measured {
  endpoint: Endpoint;
  /** ok: measured; absent: the page is not there yet (404); error: another status. */
  state: 'ok' | 'absent' | 'error';
  status: number;
  /** The first request's time: the database's caches cold for this query (the first warm-up, not in the samples). */
  first: number;
  samples: number[];
  bytes: number;
  note?: string;
}

const short = (path: string) => (path.length > 64 ? `${path.slice(0, 61)}...` : path);

/** The pages and queries measured, in order; the baselines come first and again last. */
function endpoints(seed: Seeded): Endpoint[] {
  const l = seed.landmarks;
  const day = (offset: number) => new Date(seed.seededAt - offset * 86_400_000).toISOString().slice(0, 10);
  const deep = encodeCursor(l.middle.createdAt, l.middle.requestId);
  const q = (params: Record<string, string>) => `?${new URLSearchParams(params)}`;
  const c = (path: string, what: string): Endpoint => ({ group: 'console', path, what });
  const a = (path: string, what: string): Endpoint => ({ group: 'api', path, what });
  return [
    c('/', 'Overview, default (7 days)'),
    c(`/${q({ period: '24h' })}`, 'Overview, last 24 hours'),
    c(`/${q({ period: '7d' })}`, 'Overview, last 7 days'),
    c(`/${q({ period: '30d' })}`, 'Overview, last 30 days'),
    c(`/${q({ period: 'custom', from: day(20), to: day(10) })}`, 'Overview, a custom 10-day range'),
    c('/usage', 'Usage, default (7 days by model)'),
    ...(['tag', 'session', 'model', 'key', 'day'] as const).map((g) => c(`/usage${q({ period: '30d', group_by: g })}`, `Usage, 30 days by ${g}`)),
    c(`/usage${q({ period: '24h', group_by: 'hour' })}`, 'Usage, 24 hours by hour'),
    c(`/usage${q({ period: '30d', group_by: 'model', tag: l.busiestTag })}`, 'Usage, 30 days by model, the busiest tag'),
    c(`/usage${q({ period: '30d', group_by: 'tag', model: l.busiestModel, key_id: l.keyId })}`, 'Usage, 30 days by tag, one model and key'),
    c(`/usage${q({ period: '30d', group_by: 'day', session_id: l.oldSession })}`, 'Usage, 30 days by day, one session'),
    c(`/usage.csv${q({ period: '30d', group_by: 'session' })}`, 'Usage CSV, 30 days by session'),
    c('/requests', 'Request log, first page'),
    c(`/requests${q({ status: 'error' })}`, 'Request log, errors (3 %)'),
    c(`/requests${q({ model: l.busiestModel })}`, 'Request log, one model'),
    c(`/requests${q({ tag: l.rareTag })}`, 'Request log, the rarest tag'),
    c(`/requests${q({ session_id: l.oldSession })}`, 'Request log, a session 25 days old'),
    c(`/requests${q({ key_id: l.keyId })}`, 'Request log, one key'),
    c(`/requests${q({ cache_status: 'hit' })}`, 'Request log, cache hits'),
    c(`/requests${q({ cursor: deep })}`, 'Request log, a page 15 days deep (cursor)'),
    c(`/requests/${l.newestRequest}`, 'One request, the newest'),
    c(`/requests/${l.failedRequest}`, 'One request, an old failure with attempts'),
    c('/settings', 'Settings'),
    a('/api/v1/tenant/usage', 'usage totals, 30 days'),
    ...(['tag', 'session', 'model', 'key', 'day', 'hour'] as const).map((g) => a(`/api/v1/tenant/usage${q({ group_by: g })}`, `usage grouped by ${g}`)),
    a(`/api/v1/tenant/usage${q({ group_by: 'model', tag: l.busiestTag })}`, 'usage by model, the busiest tag'),
    a(`/api/v1/tenant/usage${q({ from: day(1) })}`, 'usage totals, last 24 hours'),
    a('/api/v1/tenant/requests', 'request log, first page (50)'),
    a(`/api/v1/tenant/requests${q({ limit: '200' })}`, 'request log, a page of 200'),
    a(`/api/v1/tenant/requests${q({ model: l.busiestModel })}`, 'request log, one model'),
    a(`/api/v1/tenant/requests${q({ tag: l.rareTag })}`, 'request log, the rarest tag'),
    a(`/api/v1/tenant/requests${q({ session_id: l.oldSession })}`, 'request log, a session 25 days old'),
    a(`/api/v1/tenant/requests${q({ session_id: l.recentSession })}`, 'request log, the latest session'),
    a(`/api/v1/tenant/requests${q({ key_id: l.keyId })}`, 'request log, one key'),
    a(`/api/v1/tenant/requests${q({ status: 'error' })}`, 'request log, errors (3 %)'),
    a(`/api/v1/tenant/requests${q({ status: '429' })}`, 'request log, one status code'),
    a(`/api/v1/tenant/requests${q({ cache_status: 'hit' })}`, 'request log, cache hits'),
    a(`/api/v1/tenant/requests${q({ model: l.busiestModel, cursor: deep })}`, 'request log, one model, 15 days deep'),
    a(`/api/v1/tenant/requests${q({ cursor: deep })}`, 'request log, a page 15 days deep (cursor)'),
    a(`/api/v1/tenant/requests/${l.newestRequest}`, 'one request, the newest'),
    a(`/api/v1/tenant/requests/${l.failedRequest}`, 'one request, an old failure with attempts'),
  ];
}

const BASELINES: Endpoint[] = [
  { group: 'baseline', path: '/healthz', what: 'health check (no database)' },
  { group: 'baseline', path: '/api-keys', what: 'console page reading no usage record' },
  { group: 'baseline', path: '/api/v1/tenant', what: 'API call reading no usage record' },
];

async function measure(url: string, session: string, endpoint: Endpoint): Promise<Measured> {
  const headers: Record<string, string> = endpoint.path.startsWith('/api/') ? { authorization: `Bearer ${session}` } : { cookie: `gw_console=${session}` };
  const get = async () => {
    const started = performance.now();
    const res = await fetch(`${url}${endpoint.path}`, { headers, redirect: 'manual', signal: AbortSignal.timeout(60_000) });
    const body = await res.text();
    return { ms: performance.now() - started, status: res.status, body };
  };
  const first = await get();
  if (first.status !== 200) {
    // The app's answer to a path no route serves (platform/http.ts), as against a route's own 404.
    const absent = first.status === 404 && first.body.includes('"code":"not_found"') && first.body.includes('No route for');
    return { endpoint, state: absent ? 'absent' : 'error', status: first.status, first: first.ms, samples: [], bytes: 0, note: first.body.slice(0, 200) };
  }
  for (let i = 1; i < WARMUP; i++) await get();
  const samples: number[] = [];
  const started = performance.now();
  let bytes = 0;
  while (samples.length < SAMPLES && (samples.length < MIN_SAMPLES || performance.now() - started < BUDGET_MS)) {
    const r = await get();
    if (r.status !== 200) return { endpoint, state: 'error', status: r.status, first: first.ms, samples, bytes, note: r.body.slice(0, 200) };
    samples.push(r.ms);
    bytes = Buffer.byteLength(r.body);
  }
  return { endpoint, state: 'ok', status: 200, first: first.ms, samples: samples.sort((x, y) => x - y), bytes };
}

interface DbRun {
  kind: Kind;
  check: { ok: boolean; text: string };
  seed: Seeded;
  results: Measured[];
  baselines: Map<string, number[]>;
  rss: { before: number; peak: number; after: number };
  /** The live JS heap after a full GC, before and after the requests (MiB). */
  heap: { before: number; after: number };
  cpu: string;
  measureSeconds: number;
}

async function runOn(kind: Kind): Promise<DbRun> {
  const dataDir = mkdtempSync(join(tmpdir(), 'console-bench-'));
  let schema: Awaited<ReturnType<typeof freshSchema>> | undefined;
  let smtp: TestSmtpServer | undefined;
  let server: ChildServer<{ url: string }> | undefined;
  try {
    schema = kind === 'postgres' ? await freshSchema(POSTGRES_URL!) : undefined;
    smtp = await startSmtpServer();
    const env: Record<string, string> = {
      DATA_DIR: dataDir,
      GATEWAY_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
      LOG_LEVEL: 'warn',
      ...(SCALE < 1 ? { BENCH_CONSOLE_SCALE: String(SCALE) } : {}),
      ...(schema ? { GATEWAY_DATABASE_URL: schema.url } : {}),
    };
    log(`console (${kind}): seeding ${MAIN_TENANT.records + OTHER_TENANTS.reduce((n, t) => n + t.records, 0)} usage records through the usage writer`);
    const seeded = await seed(env);
    log(`console (${kind}): seeded in ${fmt(seeded.seconds, 1)} s; starting the gateway`);
    // Mail over SMTP with STARTTLS, as production requires, to the server in this process.
    // --expose-gc for the memory question only: the live heap, told apart from garbage not yet collected.
    const mail = { SMTP_HOST: 'localhost', SMTP_PORT: String(smtp.port), SMTP_TLS_CA: CERT_FILE };
    server = await startServer<{ url: string }>(`console-${kind}`, SERVER, { ...env, ...mail, NODE_OPTIONS: '--expose-gc' });
    const session = await signIn(server, smtp, seeded.tenant.email);
    const url = server.info.url;
    const check = await checkTotals(url, session, seeded);
    if (!check.ok) log(`console (${kind}): ${check.text}`);
    const heapBefore = (await server.ask<NodeJS.MemoryUsage>('memory')).heapUsed / 2 ** 20;
    const rssBefore = rssMiB(server.pid);
    const peak = rssPeak(server.pid);
    const cpu = cpuWindow(server.pid);
    const started = performance.now();
    const baselines = new Map<string, number[]>(BASELINES.map((b) => [b.path, []]));
    const results: Measured[] = [];
    const runBaselines = async () => {
      for (const b of BASELINES) {
        const m = await measure(url, session, b);
        if (m.state !== 'ok') throw new Error(`console: baseline ${b.path} answered ${m.status}: ${m.note}`);
        baselines.get(b.path)!.push(...m.samples);
      }
    };
    await runBaselines();
    for (const endpoint of endpoints(seeded)) {
      const m = await measure(url, session, endpoint);
      const p95 = percentile(m.samples, 95);
      log(`console (${kind}): ${short(endpoint.path)}: ${m.state === 'ok' ? `p50 ${fmt(percentile(m.samples, 50), 1)} ms, p95 ${fmt(p95, 1)} ms (${m.samples.length})` : `${m.state} (${m.status})`}`);
      results.push(m);
    }
    await runBaselines();
    for (const samples of baselines.values()) samples.sort((x, y) => x - y);
    const shares = cpu();
    const rssAfter = rssMiB(server.pid);
    const heapAfter = (await server.ask<NodeJS.MemoryUsage>('memory')).heapUsed / 2 ** 20;
    return {
      kind,
      check,
      seed: seeded,
      results,
      baselines,
      rss: { before: rssBefore, peak: peak(), after: rssAfter },
      heap: { before: heapBefore, after: heapAfter },
      cpu: cpuText(shares, 'gateway'),
      measureSeconds: (performance.now() - started) / 1000,
    };
  } finally {
    await server?.stop();
    await smtp?.close();
    await schema?.drop();
    rmSync(dataDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 });
  }
}

const ms = (x: number) => (x < 10 ? fmt(x, 1) : fmt(x));

function rowsOf(run: DbRun): { rows: Row[]; summary: Row } {
  const base = (path: string) => run.baselines.get(path)!;
  const baseText = (path: string) => `${path} p50 ${ms(percentile(base(path), 50))}, p95 ${ms(percentile(base(path), 95))} ms`;
  const rows: Row[] = BASELINES.map((b, i) => ({
    id: `${run.kind === 'sqlite' ? 'S' : 'P'}0.${i + 1}`,
    benchmark: `${run.kind}: GET ${b.path} (baseline: ${b.what})`,
    measured: `p50 ${ms(percentile(base(b.path), 50))} ms, p95 ${ms(percentile(base(b.path), 95))} ms (${base(b.path).length})`,
    baseline: 'n/a',
    result: 'n/a',
    target: 'none (baseline)',
    pass: true,
    verdict: 'info',
  }));
  run.results.forEach((m, i) => {
    const against = m.endpoint.group === 'api' ? '/api/v1/tenant' : '/api-keys';
    const p95 = percentile(m.samples, 95);
    const row: Row = {
      id: `${run.kind === 'sqlite' ? 'S' : 'P'}${i + 1}`,
      benchmark: `${run.kind}: GET ${short(m.endpoint.path)} (${m.endpoint.what})`,
      measured: m.state === 'ok' ? `p50 ${ms(percentile(m.samples, 50))} ms, p95 ${ms(p95)} ms (${m.samples.length}); first ${ms(m.first)} ms` : `answered ${m.status}`,
      baseline: baseText(against),
      result: m.state === 'ok' ? `p95 ${fmt(p95 / percentile(base(against), 95), 1)} × the baseline's` : 'n/a',
      target: `p95 < ${TARGET_MS} ms`,
      pass: m.state === 'ok' && p95 < TARGET_MS,
    };
    if (m.state === 'absent') row.verdict = 'NOT THERE YET';
    if (m.state === 'error') row.verdict = `ERROR ${m.status}`;
    rows.push(row);
  });
  const measured = run.results.filter((m) => m.state === 'ok');
  const failed = run.results.filter((m) => m.state === 'error');
  const absent = run.results.filter((m) => m.state === 'absent');
  const under = measured.filter((m) => percentile(m.samples, 95) < TARGET_MS);
  const worst = measured.reduce<Measured | undefined>((w, m) => (!w || percentile(m.samples, 95) > percentile(w.samples, 95) ? m : w), undefined);
  const summary: Row = {
    id: '8',
    benchmark: `console pages and usage queries on ${MAIN_TENANT.records.toLocaleString('en')} usage records (${run.kind})`,
    measured: worst ? `worst p95 ${ms(percentile(worst.samples, 95))} ms: ${worst.endpoint.what} (GET ${worst.endpoint.path.split('?')[0]})` : 'nothing measured',
    baseline: baseText('/api-keys'),
    result: `${under.length} of ${measured.length} under ${TARGET_MS} ms${absent.length ? `; ${absent.length} pages not there yet` : ''}${failed.length ? `; ${failed.length} errors` : ''}`,
    target: `every p95 < ${TARGET_MS} ms`,
    pass: measured.length > 0 && under.length === measured.length && failed.length === 0,
  };
  if (!run.check.ok) summary.verdict = 'INVALID';
  return { rows, summary };
}

function detailsOf(run: DbRun): string[] {
  const s = run.seed;
  const others = OTHER_TENANTS.map((t) => t.records.toLocaleString('en')).join(', ');
  const errors = run.results.filter((m) => m.state === 'error').map((m) => `${m.endpoint.path} answered ${m.status}: ${m.note}`);
  return [
    `${run.kind}: seeded ${s.records.toLocaleString('en')} records (the console's tenant ${MAIN_TENANT.records.toLocaleString('en')}, four others ${others}) through the usage writer in ${fmt(s.seconds, 1)} s (${Math.round(s.records / s.seconds)} records/s)${run.kind === 'postgres' ? `, then ANALYZE in ${fmt(s.analyzeSeconds, 1)} s` : ''}.`,
    `${run.kind}: check: ${run.check.text}.`,
    `${run.kind}: gateway RSS ${fmt(run.rss.before)} MiB after sign-in, peak ${fmt(run.rss.peak)} MiB, ${fmt(run.rss.after)} MiB after every page (${fmt(run.measureSeconds)} s of requests, one at a time); live JS heap after a full GC ${fmt(run.heap.before, 1)} MiB before, ${fmt(run.heap.after, 1)} MiB after; CPU meanwhile: ${run.cpu}${run.kind === 'postgres' ? ' (the rest includes PostgreSQL itself)' : ''}.`,
    ...errors.map((e) => `${run.kind}: ${e}`),
  ];
}

export async function consoleBenchmark(): Promise<{ rows: Row[]; details: string[]; raw: Record<string, unknown>; section: Section }> {
  const kinds: Kind[] = POSTGRES_URL ? ['sqlite', 'postgres'] : ['sqlite'];
  const runs: DbRun[] = [];
  for (const kind of kinds) runs.push(await runOn(kind));
  const tables = runs.map(rowsOf);
  const details = runs.flatMap(detailsOf);
  if (!POSTGRES_URL) details.push('PostgreSQL not measured: TEST_POSTGRES_URL was not set.');
  const section: Section = {
    title: 'Console pages on a million usage records',
    method: METHOD,
    rows: tables.flatMap((t) => t.rows),
    details,
  };
  const raw = {
    console: runs.map((r) => ({
      kind: r.kind,
      seed: { seconds: r.seed.seconds, records: r.seed.records, analyzeSeconds: r.seed.analyzeSeconds },
      rss: r.rss,
      heap: r.heap,
      baselines: Object.fromEntries([...r.baselines].map(([path, samples]) => [path, { p50: percentile(samples, 50), p95: percentile(samples, 95), n: samples.length }])),
      endpoints: r.results.map((m) => ({
        path: m.endpoint.path,
        state: m.state,
        status: m.status,
        p50: percentile(m.samples, 50),
        p95: percentile(m.samples, 95),
        first: m.first,
        n: m.samples.length,
        bytes: m.bytes,
      })),
    })),
  };
  return { rows: tables.map((t) => t.summary), details: [], raw, section };
}

const METHOD = `\`npm run bench -- console\` (bench/benchmarks/console-pages.ts) runs this part alone and prints its table;
\`BENCH_CONSOLE_SCALE=0.01\` seeds a hundredth of the records (a quick check of the harness, not of the target).

- Data (bench/lib/console-seed.ts): the console's tenant holds ${MAIN_TENANT.records.toLocaleString('en')} usage records over the last 30 days,
  four other tenants ${OTHER_TENANTS.reduce((n, t) => n + t.records, 0).toLocaleString('en')} between them, interleaved in time order as the gateway
  writes them: 20 API keys used unevenly, 50 tags, about 18,000 sessions of 5 to 100 turns (5 % of records outside any
  session), 10 catalog models over 3 providers plus routed \`auto\` sessions, 3 % errors with their codes and attempts,
  20 % cache hits, 3 % dedups, a quarter compacted, provider prompt-cache reads, log-normal latencies. Written through the
  gateway's own usage writer (\`record\`, then \`flush\` every 5,000; no journal), so whatever it maintains besides the
  records (rollups) is maintained, by bench/servers/console-server.ts in seed mode, into a fresh SQLite file or a fresh
  PostgreSQL schema (\`TEST_POSTGRES_URL\`; \`ANALYZE\`d after seeding, as autovacuum soon would; dropped afterwards).
  Re-seeded every run; the seeding time is the usage writer's throughput on this machine. Before measuring, the usage
  API's totals over everything seeded must equal the seeded records' (count, errors, cache hits, dedups, cost); else
  the verdict reads INVALID.
- The gateway: bench/servers/console-server.ts, the real service (\`createGatewayService\`, workers started, the defaults
  of \`npm run start:gateway\`, \`LOG_LEVEL=warn\`) in its own process on that database. The bench signs in over HTTP as a
  browser does: \`GET /sign-in\` (pre-session cookie, CSRF token), \`POST /sign-in\` with the tenant's address, the magic
  link from the email (SMTP with STARTTLS to a server in the bench process, test/helpers/smtp.ts), \`GET\` then
  \`POST /auth/magic-link\`: the session cookie, whose token is also the API's Bearer token.
- Each page or query: ${WARMUP} requests unmeasured, then ${SAMPLES} (or as many as fit in ${BUDGET_MS / 1000} s, at least ${MIN_SAMPLES}), one at a time,
  timed in the bench process from the send to the last byte over 127.0.0.1. Target: p95 under ${TARGET_MS} ms. "first": the
  first of the unmeasured requests. Baselines, measured the same way before and after all the others: \`/api-keys\` (a
  console page that reads no usage record) for the console's pages, \`/api/v1/tenant\` for the API's, and \`/healthz\`.
  A path no route serves yet (404 \`not_found\`) reads NOT THERE YET. The machine is shared: compare the multiples of
  the baselines more than the milliseconds.`;

/** `node bench/benchmarks/console-pages.ts` runs it alone and prints the figures. */
if (import.meta.url === `file://${process.argv[1]}`) {
  const { textTable } = await import('../lib/report.ts');
  const { section } = await consoleBenchmark();
  process.stdout.write(`${textTable(section.rows)}\n\n${section.details.map((d) => `- ${d}`).join('\n')}\n`);
  process.exit(0);
}

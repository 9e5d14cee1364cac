/** One benchmark's line in the results table. */
export interface Row {
  /** The benchmark's number in docs/BENCHMARKS.md's method ("4a"); by default the row's position. */
  id?: string;
  benchmark: string;
  measured: string;
  baseline: string;
  result: string;
  target: string;
  pass: boolean;
  /** Shown instead of PASS/FAIL: for a benchmark without a target, or a run that measured the wrong thing. */
  verdict?: string;
}

/** A benchmark with its own section after the results: its method, its table, its figures. */
export interface Section {
  title: string;
  /** Markdown: how it is measured. */
  method: string;
  rows: Row[];
  details: string[];
}

export interface Report {
  date: string;
  node: string;
  machine: string;
  cores: number;
  seconds: number;
  rows: Row[];
  /** Supporting figures, one sentence each. */
  details: string[];
  /** Written after the results, each under its own heading. */
  sections?: Section[];
}

const HEADER = ['#', 'benchmark', 'measured', 'in-run baseline', 'result', 'target', 'verdict'];

function cells(rows: Row[]): string[][] {
  return rows.map((r, i) => [r.id ?? String(i + 1), r.benchmark, r.measured, r.baseline, r.result, r.target, r.verdict ?? (r.pass ? 'PASS' : 'FAIL')]);
}

/** The table as aligned text, for the terminal. */
export function textTable(rows: Row[]): string {
  const all = [HEADER, ...cells(rows)];
  const widths = HEADER.map((_, c) => Math.max(...all.map((row) => row[c]!.length)));
  const line = (row: string[]) => row.map((cell, c) => cell.padEnd(widths[c]!)).join('  ');
  return [line(HEADER), widths.map((w) => '-'.repeat(w)).join('  '), ...cells(rows).map(line)].join('\n');
}

function markdownTable(rows: Row[]): string {
  const line = (row: string[]) => `| ${row.map((c) => c.replaceAll('|', '\\|')).join(' | ')} |`;
  return [line(HEADER), line(HEADER.map(() => '---')), ...cells(rows).map(line)].join('\n');
}

/** A section as docs/BENCHMARKS.md holds it (a run of parts keeps it in last-run.json, to paste). */
export function sectionMarkdown(section: Section): string {
  return `
## ${section.title}

${section.method}

${markdownTable(section.rows)}

${section.details.map((d) => `- ${d}`).join('\n')}
`;
}

/** The whole of docs/BENCHMARKS.md. */
export function markdown(report: Report): string {
  return `# Benchmarks

Written by \`npm run bench\` (bench/run.ts); do not edit by hand. Last run: ${report.date}, Node ${report.node}, ${report.machine}.

## Method

The machine is shared and noisy (${report.cores} cores), so no figure here is an absolute number to compare across runs: each is a
ratio against a baseline measured in the same run, or a latency bound that must hold whatever the machine's speed.

- The service under test runs in its own process (bench/servers/auth-server.ts): the real service built by \`loadAuthConfig\` +
  \`createAuthService\`, workers started, SQLite in a temporary \`DATA_DIR\`, bcrypt cost 12 (\`AUTH_BCRYPT_COST\` unset),
  \`LOG_LEVEL=warn\`, \`SMTP_HOST\` unset (mail goes to the log transport). autocannon drives it from the bench process over
  127.0.0.1; the two share the machine's cores.
- \`AUTH_LIMIT_LOGIN=1000000/60\`: all the load comes from one end-user \`ip\`, which the default per-IP bucket (30/300) would turn
  into 429s after 30 logins. Every other setting but OAuth's (below) is the default.
- Each measurement also says who used the CPU meanwhile, in cores: the server, the bench process (autocannon), and the rest of
  the machine (other processes, and kernel time such as loopback networking). A large "rest" means the run was disturbed.
- The bench account is created before the server listens, through the domain functions (register; the token from the
  verification email's text in the outbox, opened with the service's key; verifyEmail). The bench then signs in over HTTP for its session token.
- OAuth is on: a static client (\`OAUTH_CLIENT_ID\`, \`OAUTH_CLIENT_SECRET\`, \`OAUTH_CLIENT_REDIRECT_URIS=http://127.0.0.1/callback\`),
  \`OAUTH_PUBLIC_ENDPOINTS=true\` (no X-Api-Key on the OAuth paths), \`AUTH_BASE_URL\` = the server's own URL (the issuer), the
  refresh reuse grace window at its default, off. Before any load the bench registers a public client with
  \`POST /oauth/register\` and runs the authorization code flow with PKCE over HTTP (bench/lib/oauth-flow.ts):
  \`GET /oauth/authorize\`, the login form and the consent form (each posted with its CSRF cookie and field), the code to
  \`POST /oauth/token\`. Later authorizations reuse the browser session and the remembered consent, so \`/oauth/authorize\`
  answers with a code at once; each costs a few milliseconds, outside every measurement window.

1. **Login throughput against its physical limit.** Baseline: one bcrypt cost-12 hash of a 44-byte input (the length of the
   service's prehash) by each bcrypt implementation the bench can load (bench/lib/bcrypt-candidates.ts: \`bcrypt\` and
   \`@node-rs/bcrypt\`, each in whatever version the project's node_modules or a directory of \`BENCH_BCRYPT_DIRS\` holds), timed
   in turn several times before and after the load, with the server idle; bound = cores / the mean hash time of the fastest of
   them, whichever one the service uses. Load: \`POST /v1/login\`
   (verified account, right password) on 4 × cores connections; the rate counts 2xx responses in a 15 s window that starts after
   2 s of warm-up. Target: at least 90 % of the bound.
2. **\`GET /v1/me\` latency while logins saturate the CPU.** Right after window 1, the login load still running, \`GET /v1/me\` at
   50 requests/s on 2 connections for 10 s; percentiles over the exact latency of every 2xx response. autocannon sends each
   connection's share of a second back to back and then waits for the next second, which is, if anything, harsher than an even
   pace. Baseline: the same probe for 5 s on the idle server (after 1 s of warm-up), before the login load. Target: p99 under 20 ms.
3. **\`GET /v1/me\` throughput against a bare Fastify route.** The baseline is Fastify 5 with its defaults and one route answering
   \`{"ok":true}\` (bench/servers/bare-fastify.ts, also its own process). 16 connections; 2 s warm-up each, then 5 s slices in the
   order bare, me, me, bare, so that drift in the machine's speed weighs on both alike. Target: ratio at least 0.40.
4. **OAuth endpoints against the bare Fastify route**, each in its own slices like 3 (2 s warm-up each, then bare, route,
   route, bare; the bare route on the same number of connections).
   - **4a.** \`GET /oauth/userinfo\` with \`Authorization: Bearer\` and an OAuth access token (scope \`identity\`), 16
     connections. Target: ratio at least 0.40.
   - **4b.** \`POST /oauth/token\` with \`grant_type=refresh_token\` (public client: \`client_id\`, no secret), 8 connections. Every
     refresh rotates the token, so each connection runs a chain: it starts from the refresh token of an authorization of its
     own and sends, each time, the refresh token of the previous response (autocannon's \`setupClient\`, \`setupRequest\` and
     \`onResponse\`). Each run, warm-up included, starts fresh chains (8 new authorizations): a run ends with requests in
     flight whose successors are lost. A non-2xx response, or a 2xx one without a new refresh token, would mean a broken
     chain, measured on the wrong path; the verdict then reads INVALID. Reported: the ratio, the absolute rate and the rate
     per core of the server's measured CPU, beside Keycloak's sizing figure of 120 refresh token requests per second per vCPU
     (keycloak.org, "Concepts for sizing CPU and memory resources"); per refresh, the server's CPU time (all its threads,
     from /proc) and what it wrote: database rows (the server answers the bench over an IPC channel with SQLite's
     \`total_changes()\` on its one write connection, read right before and after each measured slice) and bytes sent to
     storage (\`write_bytes\` of /proc/<pid>/io over the same windows: the write-ahead log's appends and the checkpoints'
     copies, all threads), each divided by the 2xx refreshes of the slices; and the exact latency of every 2xx refresh
     (p50, p99). Target: p99 at most 3 × p50 (no request stalled behind a checkpoint or a burst of writes). Beside the
     latencies, each measured slice reports what stalled: the server's event-loop lateness (p99, max) and its garbage
     collections (count, total and longest pause), from a meter inside the server (bench/servers/stall-meter.ts, read over
     the IPC channel at the slice's edges), and the bench process's own event-loop lateness: a late server delays every
     request in flight; a late load generator adds its lateness to the latencies it measures. On this 2-core machine the
     slices are only comparable when "rest of the machine" is near 0 %: another process's CPU preempts the server or the
     load generator for whole scheduler slices, and those milliseconds land in the p99.
     Where the tail came from (November 2026, instrumented runs on this machine): the request handler itself takes
     about 0.12 ms (p99 0.35 ms) of the 1 ms p50; the rest is waiting for the event loop behind the other connections'
     requests, so whatever stops the server's event loop for a millisecond or more delays all 8 requests in flight.
     Three such stalls were found: (1) the log restart: under sustained writes the writer ran a checkpoint with two
     fsyncs on the event loop (3 to 11 ms) every 16,000 pages of log, about every 2,400 refreshes; the threshold is now
     60,000 pages, four times rarer. (2) The checkpoint thread's bursts: every 50 ms it copied about 8 MiB and took
     about 8 ms, and two thirds of the request thread's commits over 0.5 ms fell inside one; it now checkpoints every
     5 ms while the log grows (2 ms per checkpoint), 50 ms when idle. (3) Scavenges: about 1.4 per 1000 refreshes,
     about 1.2 ms each, unchanged. Each refresh also reads its token, family and client in one lookup now (was two).
     Quiet runs ("rest of the machine" 0 %), before (checkpoints every 50 ms): p99 = 4.48 and 4.43 × p50 (p50 0.95 and
     0.89 ms, p99 4.24 and 3.95 ms); after: 3.08, 3.38 and 3.48 × p50 (p50 1.00, 0.94, 0.95 ms; p99 3.07, 3.16,
     3.31 ms), the server's event-loop lateness p99 from 2.7 to 3.4 ms down to 1.4 to 2.3 ms, the bench process's from
     1.8 to 2.2 ms down to 0.8 to 1.5 ms. Checkpoints every 2 ms were no better (3.47, 3.47 ×).
     Then (November 2026) the scavenges themselves: at 8 requests in flight, one scavenge of about 1.2 ms delays
     about 8 requests, so 1.4 per 1000 refreshes put about 1.1 % of all refreshes behind one: the p99 was a scavenged
     request. Scavenges come from garbage, about 40 KiB per refresh (sampled with the heap profiler, objects collected
     by the young generation included), two fifths of it from Kysely's asynchronous path: a transaction builder,
     a connection queue, a promise and frozen query objects per statement, and four statements (begin, claim,
     insert, commit) per rotation. The rotation is now one synchronous SQLite transaction on the write connection
     (src/platform/prepared-transaction.ts): two prepared statements, each one Kysely query compiled once per dialect
     (the same SQL runs through Kysely and pg on PostgreSQL); the transaction is BEGIN IMMEDIATE, claim, insert,
     COMMIT with nothing else able to run between them, and falls back to Kysely's queue whenever Kysely has a
     transaction of its own open on that connection. The refresh token's row is also built once instead of copied
     twice. Durability is unchanged (the same connection, pragmas and checkpointing). About 24 KiB of garbage per
     refresh now. Interleaved runs of both versions on this machine while other work shared it (8 connections, 4 s
     slices, each server fresh; the server's CPU per refresh 2 to 3 times the full run's, so the machine was slow even
     when "rest of the machine" read 0 to 6 %): scavenges from 2.8-2.9 to 1.6-1.7 per 1000 refreshes, CPU per refresh
     17 % less, 19 % more refreshes per second, p50 and p99 both about 15 % lower, and so p99 / p50 unchanged
     (before 3.46, 2.75, 3.28, 2.69, 3.20, 2.62; after 3.56, 2.79, 2.75, 2.61, 3.39, 2.93; the first slice after the
     warm-up is the worse each time). At that slower pace a 1.2 ms scavenge is half a p50; at the full run's pace it
     is more than one, which is where fewer of them should show. Left as they were: the log restart and the checkpoint
     thread (rare, or on another thread); a larger young generation (node --max-semi-space-size) would cut scavenges
     further but treats the garbage's symptom and costs memory.
5. **The gateway against the Node floor and Portkey** (bench/benchmarks/gateway.ts), side by side in one run. Every target
   runs in its own process against the same fake provider (tools/fake-provider, its own process too), answering at once for
   throughput, CPU and memory, and after 20 ms (then an SSE event every 10 ms) for latency and streaming. Targets: the fake
   called directly (the baseline of the compared rows); the Node floor (bench/servers/node-floor.ts: node:http piping each
   request to an undici Pool and the answer back, nothing parsed: no gateway written in Node can add less); this gateway
   (bench/servers/gateway-server.ts: the real service on SQLite, usage records written, one tenant whose OpenAI key has the
   fake as its base_url; requests name \`openai/gpt-4o-mini\`, a catalog model, so each call is priced; the tenant turns
   every pipeline stage on: safe compaction, routing of named models, limits on requests, tokens and USD high enough
   never to refuse, the response cache and dedup, and provider prompt caching with \`X-Gateway-Session-Id\`); and Portkey's
   open-source gateway (npm \`@portkey-ai/gateway\`, installed by the bench into the git-ignored bench/.portkey, routed with
   \`x-portkey-provider: openai\` and \`x-portkey-custom-host\`). The same non-streamed request everywhere, each one made
   different by a fresh id in its message (autocannon's \`[<id>]\`), so no cache answers it and every call goes upstream.
   Throughput and CPU per request: 50 connections, 8 s warm-up (2 s until 28 November 2026: a process's first seconds
   under load cost more than twice the CPU per call of its steady state: code still being optimized, and the heap and
   allocator growing, with first-touch page faults at about 11 µs each on these VMs; see THROUGHPUT_WARMUP_S), then 5 s
   slices of each target in order and reversed, twice over (20 s per target; once, 10 s, until 29 November 2026).
   Added latency: 10 connections on the 20 ms fake, every target started afresh for it, 8 s of warm-up each (2 s until
   28 November 2026, which left a fresh process's start-up in the measured tail: this gateway's p99 was 99 ms in its first
   2 s under load, 37 ms in the next 2 s and 26 to 29 ms after, the floor's 59.5 ms, then 24 to 31 ms; the first 2 s are
   reported apart, not judged), then 5 s slices in order and reversed, three times over (30 s per target; once, 10 s,
   until 29 November 2026: the fake answers the ten connections together, so slow calls come in bursts and a p99 read
   from 10 s rests on a handful of them; in one run of eight slices per target, a slice's p99 ranged 24.9 to 28.2 ms for
   this gateway and 22.8 to 25.6 ms for the floor, and whole runs read gaps from -1.1 to +5.4 ms); the exact latency of
   every 2xx response minus the direct figures, and the p99 of each slice on its own in the notes.
   Streaming time to first byte: 200 \`stream: true\` requests (with \`include_usage\`), 4 at a time, from the send to the
   first body byte. RSS (/proc/<pid>/status): idle after start, the peak during the throughput slices, once idle after
   100,000 requests (for this gateway and the floor: after 100,000 in a row, and since 28 November 2026 not a top-up to
   100,000 after the process had idled through the other targets' turns, which left the first reading below the working
   set, so that the check measured its refill: 460 MiB against 499 to 502 after 100,000 in a row, and +12 to +20 MiB
   over the next 100,000 against +2.7 to +5.8 in a row) and after 100,000 more; for this gateway also the live JS heap after
   a full GC at both points (the server answers over IPC; started with --expose-gc for that question only), which tells a
   leak from a heap that has merely grown. Targets, against the floor in the same run: throughput at least 0.5 of the
   floor's; p99 within 2 ms of the floor's; RSS flat from 100,000 to 200,000 requests (at most 8 MiB more), judged on the
   RSS read right after each full GC (the idle readings before it also hold heap V8 reserved for garbage and keeps for
   minutes). Found on the way (November 2026): with the response cache on, every call's objects (its request and
   response, its dedup flight, the provider's answer) were promoted to the old generation, 0.9 to 1.7 MB per scavenge at
   10 connections against 0.1 MB with the cache off, and each scavenge stopped the event loop 4 to 8 ms instead of 1 to 2.
   Two causes, each enough on its own: the flights in progress were kept in a long-lived Map whose entries came and went
   with every call (V8 links each table a Map outgrows or shrinks from to its successor, and a dead table in the old
   generation still counts as a root for the young one, so the chain carried every entry into the old generation; the
   same churn through a dictionary object promoted 3 MB where the Map promoted 133 MB in a test loop), and each flight's
   own AbortController and its listener on the leader's signal. The flights are now a dictionary, and the leader's call
   is stopped through its own signal (its client leaving tells the flight instead of aborting it). Interleaved runs:
   2,850 to 3,252 calls/s and 436 to 368 µs of CPU per call, scavenges back to 0.1 MB promoted and 1.2 to 2.3 ms.
   At 50 connections a third cause remained, V8's allocation-site pretenuring: a run settled either at 0.3 MB promoted
   per scavenge or (one run in three) at 6.5 to 7 MB and 12 to 15 ms pauses, once V8 had switched the sites that build a
   call's objects to old-generation allocation. The services now turn it off at start (src/platform/v8-tuning.ts): 0.1 MB
   and 2 ms in every run, and in interleaved runs 2,858 to 3,999 calls/s (CPU per call 416 to 289 µs).
   **5b. Where the gateway's CPU goes** (bench/benchmarks/gateway-breakdown.ts, part \`breakdown\`): the same gateway
   with every stage on (as above), with no stage (cache, dedup, compaction, routing, limits, prompt caching off), and
   with no stage and no usage journal, beside the floor: 50 connections on the 0 ms fake, every request new, four 5 s
   slices each, in order then reversed; and, as the bound under all of them, the least gateway
   (bench/servers/least-gateway.ts): the floor plus only what a gateway keeping a usage record of every call cannot
   skip (the body parsed, the key hashed and looked up, the answer parsed and priced, ten X-Gateway-* headers, one row
   in the gateway's own usage_records table with its indexes), with and without that row. No target: it tells the
   pipeline's share of the gap to the floor from the share of the path every call takes, and how much of the floor
   any such gateway keeps here.
6. **Idle memory of each service** (bench/benchmarks/idle-memory.ts, bench/lib/idle-rss.ts): \`src/auth/main.ts\`,
   \`src/gateway/main.ts\` and \`src/main.ts\` started as the npm scripts run them (SQLite in a fresh DATA_DIR, nothing else
   configured), RSS read 2 s after the ready line, beside an idle Node process running TypeScript.
7. **What the gateway saves, against the same client sent directly** (bench/benchmarks/gateway-savings.ts): the transcript
   corpus (bench/corpus/transcripts.jsonl, else the small sample.jsonl) replayed turn by turn, each turn a non-streamed
   request with the conversation so far and \`X-Gateway-Session-Id\`, for \`anthropic/claude-sonnet-4-5\` and \`openai/gpt-5\`,
   by two clients (bench/lib/savings-clients.ts): \`naive\` (no cache hints) and \`cache-aware\` (as Claude Code, Codex and
   most agent frameworks send: for Anthropic, \`cache_control\` on the last tool, the system prompt and the last message,
   tool results always as text parts; for OpenAI, a \`prompt_cache_key\` from the session id). Each client is sent directly
   to the fake provider (Anthropic requests as the adapter translates them without a plan, which carries the client's
   breakpoints over) and through the gateway with \`X-Gateway-Compact\` \`off\`, \`safe\`, \`agent\` (with its defaults,
   and with the tenant's knobs turned down for short sessions: trigger 8,000 tokens, keep 3, batch 4,000), \`aggressive\`,
   and \`aggressive\` with the tenant's routing on; a way the gateway refuses with a 400 is skipped and its reason recorded.
   Each way runs against a fresh fake with its prompt-cache simulation on (tools/fake-provider/README.md; OpenAI requests
   routed by their first 256 tokens and \`prompt_cache_key\`); the fake's answers are as long as the corpus's. Cost: what
   each fake billed, priced with the catalog; the measured saving is the same client's direct bill minus the way's. The
   claim is the usage records' cost_saved_usd (its saved_* columns, and the X-Gateway-Cost-Saved headers, must agree);
   the provider's own caching the records report (saved_provider_cache_usd, when the column exists) is shown beside it.
   From the bodies the fake received (bench/lib/upstream-prompts.ts): the tokens rewritten (per turn, the tokens of the
   session's previous prompt that this prompt no longer shares as a common prefix) and the turns whose latest exchange
   (the last assistant message and the tool results after it; Anthropic: its tool_use blocks and the tool_result blocks
   after it) differs from the client's, whitespace normalization and cache_control aside. Targets: the claim within 5 %
   of the measured saving (within 1 % of the direct bill when the saving is under 1 % of it), the latest exchange intact
   in every turn, \`off\` and \`safe\` at most 1.00x direct, \`agent\` at most 0.50x direct for the cache-aware client.
   Beside it, the floor no compaction that sends each latest exchange whole can go under: the cache-aware client's direct
   bill less what its cache reads cost, which leaves each turn's new tokens (written or sent uncached) and the output.
8. **The console on a million usage records** (bench/benchmarks/console-pages.ts): each console page and the API's usage and
   request-log queries, p95 against 200 ms; its method and full table are in its own section after the results.
9. **The gateway before and after a change that must not cost the hot path** (bench/benchmarks/gateway-before-after.ts,
   part \`before-after\`): this checkout's gateway against an earlier commit of itself (\`BEFORE\` in that file, the commit
   before issue 31's hardening, or \`BENCH_AB_BASE\`), run from a temporary git worktree, beside the Node floor. Three
   interleaved A/B runs (bench/lib/ab-run.ts), each with benchmark 5's throughput load (50 connections, the fake answering
   at once; slices of each target taking turns) for CPU per call on the main thread and in all threads, and its latency load
   (10 connections, the fake answering after 20 ms) for the in-process overhead \`X-Gateway-Overhead-Ms\` (p50, p99, read
   from every response). Judged on the median of the three runs' after/before ratios, with their spread beside it.
   Target: main-thread CPU per call at most 1.05 × before; throughput and overhead are reported.
10. **Hostile request content** (bench/benchmarks/gateway-hostile.ts, part \`hostile\`): each input of
   tools/hostile-inputs.ts (runs of one letter, spaces, newlines, \`$\`, backslashes, special tokens, mixed), about 1 MB
   of JSON three times in one body, sent once in every mode (compaction off, safe, aggressive and under a budget; \`auto\`
   routing and a named model's fallbacks; cache on and bypassed; streamed and not; prompt caching; limits; no provider
   key), plus 5,000 levels of nesting and an object of 50,000 keys, through the gateway in its own process (a 4 MiB body
   limit; bench/servers/hostile-gateway-server.ts) in front of the fake provider. A stall meter inside the gateway reads
   the longest its event loop was held per input (and the longest GC pause); beside them, the same for a normal question
   and for a normal transcript of the same size (the corpus's prose, code and JSON). Goal: no stall over 100 ms, no 5xx.
   Before the fix the same kinds of input held the loop for seconds (issue 31).

## Results

${markdownTable(report.rows)}

${report.details.map((d) => `- ${d}`).join('\n')}
${(report.sections ?? []).map(sectionMarkdown).join('')}
## Reproduce

\`\`\`sh
npm run bench
\`\`\`

It takes about ${Math.round(report.seconds / 10) * 10} s, prints the table above and rewrites this file. It exits 0 whether or not
the targets are met (a missed one shows as FAIL); raw figures go to bench/results/last-run.json (not committed).
\`npm run bench -- login\` (or any other part: \`me\`, \`oauth\`, \`gateway\`, \`breakdown\`, \`before-after\`, \`cache\`, \`compaction\`,
\`routing\`, \`savings\`, \`console\`, \`hostile\`, \`messages\`) runs only those benchmarks, prints their table and leaves this file alone.
\`BENCH_BCRYPT_DIRS=<dir>[:<dir>…]\` also times the bcrypt packages installed under each \`<dir>/node_modules\` (e.g. one where
\`npm install @node-rs/bcrypt@2\` was run), so that benchmark 1's bound comes from the fastest of all of them.
\`BENCH_CPU_PROF=<dir> npm run bench\` also writes a V8 CPU profile of each server process into \`<dir>\`;
\`node bench/profile-top.ts <dir>/<file>.cpuprofile me|userinfo|refresh\` then lists the top costs during that benchmark's measured
slices (their windows are in last-run.json). The profiles sample wall-clock time: on a busy machine, time the server spent
preempted lands in whatever it was running, most often the socket write that wakes autocannon.
\`node bench/instructions.ts [checkout …]\` counts the gateway's instructions per call under valgrind's callgrind (benchmark
5's gateway, every stage on, 2,000 calls after 4,000 of warm-up, 10 connections), on its main thread and in all its threads,
for each checkout given (default: this one), all at once: a change's effect on the call path, less blurred by this
machine's noise (the same code counted in two pairs of runs: 641k against 643k and 590k against 598k main-thread
instructions per call, 0.3 % and 1.5 % apart, where the wall-clock A/B runs of benchmark 5 swing by 10 % between slices).
Instructions are not time: cache misses, system calls and waits are left out. Nor is a change to what crosses between
threads counted fairly (valgrind runs one thread at a time): sending the usage thread its batches as arrays of strings
counted 7.6 % more on the main thread, where the event loop's own time per batch fell six-fold.
\`node bench/ab.ts NAME=CHECKOUT …\` is the wall-clock A/B: the gateways of several checkouts (a git worktree per commit), each
with settings of its own (\`--env NAME:KEY=VALUE\`), beside the Node floor on benchmark 5's throughput load (or its latency
load, \`--latency\`), their slices taking turns; per target it prints calls per second, exact p50 and p99, CPU per call on
the main thread and in all threads, and how the scheduler treated the main thread per call (time runnable but waiting for
a core, blocks, preemptions).
`;
}

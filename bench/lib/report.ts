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

export interface Report {
  date: string;
  node: string;
  machine: string;
  cores: number;
  seconds: number;
  rows: Row[];
  /** Supporting figures, one sentence each. */
  details: string[];
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
     (p50, p99). Target: p99 at most 3 × p50 (no request stalled behind a checkpoint or a burst of writes).

## Results

${markdownTable(report.rows)}

${report.details.map((d) => `- ${d}`).join('\n')}

## Reproduce

\`\`\`sh
npm run bench
\`\`\`

It takes about ${Math.round(report.seconds / 10) * 10} s, prints the table above and rewrites this file. It exits 0 whether or not
the targets are met (a missed one shows as FAIL); raw figures go to bench/results/last-run.json (not committed).
\`npm run bench -- login\` (or \`me\`, \`oauth\`) runs only those benchmarks and leaves this file alone.
\`BENCH_BCRYPT_DIRS=<dir>[:<dir>…]\` also times the bcrypt packages installed under each \`<dir>/node_modules\` (e.g. one where
\`npm install @node-rs/bcrypt@2\` was run), so that benchmark 1's bound comes from the fastest of all of them.
\`BENCH_CPU_PROF=<dir> npm run bench\` also writes a V8 CPU profile of each server process into \`<dir>\`;
\`node bench/profile-top.ts <dir>/<file>.cpuprofile me|userinfo|refresh\` then lists the top costs during that benchmark's measured
slices (their windows are in last-run.json). The profiles sample wall-clock time: on a busy machine, time the server spent
preempted lands in whatever it was running, most often the socket write that wakes autocannon.
`;
}

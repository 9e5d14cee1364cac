import { crlf, grep, material, numbered, psqlTable, pytestRun, testRun } from '../material.ts';
import type { Session } from '../session.ts';

/**
 * Second tasks in the same sessions: the user asks for more once the first
 * task is done, as real sessions go on; the agent re-reads files it has
 * already read and runs the same checks again.
 */

const exit = (output: string, code = 0) => `${output}\n[exit code ${code}]`;
const SERVER = "import express from 'express';\nimport cookieParser from 'cookie-parser';\nimport { AuthService } from './auth-service.js';\nimport { openDatabase } from './db.js';\nimport { smtpMailer } from './mailer.js';\nimport { RateLimiter } from './rate-limiter.js';\nimport { usersRouter } from './users-routes.js';\n\nconst db = await openDatabase(process.env.DATABASE_URL!);\nconst auth = new AuthService(db, smtpMailer(process.env.SMTP_URL!));\nconst app = express();\napp.use(express.json({ limit: '100kb' }));\napp.use(cookieParser());\nconst limiter = new RateLimiter({ ratePerSecond: 0.2, burst: 5 });\napp.use('/users', usersRouter(auth, limiter));\napp.get('/healthz', (_req, res) => res.json({ ok: true }));\napp.listen(Number(process.env.PORT ?? 3000));\n";

export function sweepTimer(s: Session): void {
  const limiter = material('src/rate-limiter.ts.txt');
  s.user('Also: nothing calls sweep(). Call it every minute from server.ts, and make sure the timer does not keep the process alive.');
  s.tool('read_file', { path: 'src/server.ts' }, numbered(SERVER));
  s.tool('read_file', { path: 'src/rate-limiter.ts' }, numbered(limiter));
  s.tool('edit_file', { path: 'src/server.ts', old_string: "app.use('/users'", new_string: "setInterval(() => limiter.sweep(), 60_000).unref();\napp.use('/users'" }, 'Edited src/server.ts (1 replacement).');
  s.tool('bash', { command: 'npx tsc --noEmit' }, exit(''));
  s.tool('bash', { command: 'npm test' }, exit(testRun({ seed: 23, packages: ['packages/api', 'packages/auth', 'packages/orders'], logLines: 0.5 })));
  s.tool('read_file', { path: 'src/rate-limiter.ts' }, numbered(limiter));
  s.say('`sweep()` now runs every minute from server.ts; the interval is `unref()`ed so it never holds the process open on shutdown.');
  s.user('Does sweep get slow with many keys?');
  s.tool('bash', { command: 'node --expose-gc bench/limiter-sweep.js' }, exit(psqlTable(['keys', 'sweep ms', 'heap MiB'], [[1000, '0.08', '4.1'], [10000, '0.71', '6.3'], [100000, '7.9', '27.4'], [1000000, '96.2', '212.8']])));
  s.say('It is linear: about 0.1 µs per key, so 100k keys take 8 ms once a minute. Past a million keys it is worth sweeping in slices, but that is far above what one instance sees.');
}

export function moreFlakes(s: Session): void {
  s.user('Are there other tests mixing the fixed clock with Date.now()?');
  s.tool('search', { pattern: 'Date\\.now\\(\\)', glob: 'test/**' }, Array.from({ length: 14 }, (_, i) => `test/${['orders', 'mailer', 'db', 'users-routes', 'rate-limiter'][i % 5]}.test.ts:${20 + i * 7}:    const t${i} = Date.now();`).join('\n'));
  for (const file of ['orders', 'mailer', 'db']) {
    s.tool('read_file', { path: `test/${file}.test.ts`, offset: 1, limit: 60 }, numbered(Array.from({ length: 60 }, (_, i) => (i % 7 === 0 ? `  it('${file} case ${i}', async () => {` : i % 7 === 6 ? '  });' : `    expect(await ${file}.step${i}(fixture, Date.now())).toMatchSnapshot();`)).join('\n')));
  }
  s.say('Three more files pass `Date.now()` into code under test next to a fixed clock: orders, mailer and db. None compares times across the two, so they are not flaky today, but they would be with any expiry logic. I can switch them to the fixed clock too.');
  s.user('Please do.');
  for (const file of ['orders', 'mailer', 'db']) s.tool('bash', { command: `sed -i 's/Date.now()/clock.now()/g' test/${file}.test.ts && npx vitest run test/${file}.test.ts` }, exit(` ✓ test/${file}.test.ts (9 tests) 61ms\n\n Test Files  1 passed (1)\n      Tests  9 passed (9)\n`));
  s.tool('bash', { command: 'npm test' }, exit(testRun({ seed: 33, packages: ['packages/api', 'packages/auth'] })));
  s.say('Done: every test uses the fixture clock now; the suite passes.');
}

export function backslashes(s: Session, parser: string): void {
  s.user('Yes, please fix it and add a test for it.');
  s.tool('read_file', { path: 'config/parser.py' }, numbered(parser));
  s.tool('edit_file', { path: 'config/parser.py', old_string: '        if ch == \'"\' and (i == 0 or line[i - 1] != "\\\\"):', new_string: '        if ch == \'"\' and (len(line[:i]) - len(line[:i].rstrip("\\\\"))) % 2 == 0:' }, 'Edited config/parser.py (1 replacement).');
  s.tool('edit_file', { path: 'tests/test_parser.py', old_string: 'def test_string_with_hash_character():', new_string: 'def test_escaped_backslash_before_quote():\n    assert strip_comment(r\'x = "a\\\\" # c\') == r\'x = "a\\\\" \'\n\n\ndef test_string_with_hash_character():' }, 'Edited tests/test_parser.py (1 replacement).');
  s.tool('bash', { command: 'python -m pytest -v' }, exit(pytestRun({ seed: 44, tests: 161, failures: false })));
  s.tool('bash', { command: 'python -m mypy config' }, exit('Success: no issues found in 3 source files'));
  s.say('Quotes now count as escaped only after an odd number of backslashes; the new test covers `"a\\\\"`. 161 tests pass.');
}

export function clippy(s: Session): void {
  s.user('Run clippy and the benchmarks before I merge.');
  const lint = 'warning: this `if let` can be collapsed into the outer `match`\n  --> src/lib.rs:62:9\n   |\n62 |         if let Some(h) = self.head { self.entries[h].prev = Some(index); }\n   |         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n   |\n   = help: for further information visit https://rust-lang.github.io/rust-clippy/master/index.html#collapsible_match\n\nwarning: `pagecache` (lib) generated 1 warning\n    Finished `dev` profile [unoptimized + debuginfo] target(s) in 1.02s';
  for (let i = 0; i < 2; i++) s.tool('bash', { command: 'cargo clippy -- -D warnings' }, exit(lint.replace('warning: this', 'error: this'), 101), i ? 'Once more with a clean target, to be sure it is not stale.' : undefined);
  s.tool('edit_file', { path: 'src/lib.rs', old_string: '        if let Some(h) = self.head { self.entries[h].prev = Some(index); }', new_string: '        if let Some(h) = self.head {\n            self.entries[h].prev = Some(index);\n        }' }, 'Edited src/lib.rs (1 replacement).');
  s.tool('bash', { command: 'cargo clippy -- -D warnings' }, exit('    Checking pagecache v0.3.1 (/home/dev/pagecache)\n    Finished `dev` profile [unoptimized + debuginfo] target(s) in 0.91s'));
  const bench = ['get_hit/1000', 'get_hit/100000', 'get_miss/1000', 'put_evict/1000', 'put_evict/100000', 'mixed_80_20/100000'].map((name, i) => `${name.padEnd(24)}time:   [${(18 + i * 9.1).toFixed(2)} ns ${(18.4 + i * 9.1).toFixed(2)} ns ${(18.9 + i * 9.1).toFixed(2)} ns]\n                        change: [-${(1 + i * 0.7).toFixed(2)}% -${(0.4 + i * 0.3).toFixed(2)}% +${(0.2 + i * 0.1).toFixed(2)}%] (p = 0.${31 + i} > 0.05)\n                        No change in performance detected.\nFound ${i % 3} outliers among 100 measurements (${i % 3}.00%)\n`).join('\n');
  s.tool('bash', { command: 'cargo bench' }, exit(`   Compiling pagecache v0.3.1 (/home/dev/pagecache)\n    Finished \`bench\` profile [optimized] target(s) in 14.22s\n     Running benches/lru.rs (target/release/deps/lru-8d1e3c0b7a2f9e64)\n${bench}`));
  s.say('Clippy is clean after collapsing the one `if let`; the benchmarks show no change in performance (every change within noise).');
}

export function moreQueries(s: Session): void {
  s.user('While you are at it, check the other slow queries from pg_stat_statements.');
  const rows = Array.from({ length: 12 }, (_, i) => [`${(9000 - i * 700).toFixed(1)}`, 1200 + i * 311, `select ... from ${['orders', 'order_items', 'products', 'customers'][i % 4]} where ${['status', 'sku', 'customer_id', 'email'][i % 4]} = $1 ${i % 2 ? 'order by created_at desc' : 'limit $2'}`]);
  s.tool('bash', { command: 'psql "$DATABASE_URL" -c "select round(total_exec_time::numeric, 1) as total_ms, calls, left(query, 80) as query from pg_stat_statements order by total_exec_time desc limit 12"' }, exit(psqlTable(['total_ms', 'calls', 'query'], rows)));
  for (const table of ['order_items', 'products']) {
    s.tool('bash', { command: `psql "$DATABASE_URL" -c "\\\\d ${table}"` }, exit(psqlTable(['Column', 'Type', 'Collation', 'Nullable', 'Default'], [['id', 'bigint', '', 'not null', 'generated always as identity'], ['sku', 'text', '', 'not null', ''], ['price_cents', 'integer', '', 'not null', ''], ['stock', 'integer', '', 'not null', '0']])));
    s.tool('bash', { command: `psql "$DATABASE_URL" -c "explain analyze select * from ${table} where ${table === 'products' ? 'sku' : 'product_id'} = 42"` }, exit(` Index Scan using ${table}_pkey on ${table}  (cost=0.42..8.44 rows=1 width=48) (actual time=0.019..0.020 rows=1 loops=1)\n Planning Time: 0.102 ms\n Execution Time: 0.041 ms\n(3 rows)\n`));
  }
  s.tool('read_file', { path: 'db/schema.sql' }, numbered(material('src/schema.sql')));
  s.say('The other top queries already use indexes (sub-millisecond); they are on top because of their call counts, not their cost. Nothing else to add.');
}

export function slimImage(s: Session): void {
  s.user('The image is 1.1 GB. Can you make it smaller?');
  s.tool('bash', { command: 'docker images app' }, exit(psqlTable(['REPOSITORY', 'TAG', 'IMAGE ID', 'CREATED', 'SIZE'], [['app', 'dev', '3f1c9a2e7b10', '2 minutes ago', '1.12GB']])));
  s.tool('bash', { command: 'docker history app:dev --format "{{.Size}}\\t{{.CreatedBy}}" | head -12' }, exit(['412MB\tCOPY /app/node_modules ./node_modules # buildkit', '2.1MB\tCOPY /app/dist ./dist # buildkit', '4.1kB\tCOPY package.json ./ # buildkit', '0B\tUSER node', '0B\tWORKDIR /app', '198MB\t/bin/sh -c apt-get update && apt-get install -y python3 make g++', '74.8MB\t/bin/sh -c #(nop) ADD file:... in /'].join('\n')));
  s.tool('read_file', { path: 'Dockerfile' }, numbered('FROM node:22-bookworm-slim AS build\nWORKDIR /app\n\nCOPY package.json package-lock.json ./\nRUN --mount=type=cache,target=/root/.npm \\\n    npm config set fetch-retries 5 && \\\n    npm config set fetch-retry-mintimeout 20000 && \\\n    npm ci --omit=dev\n'));
  s.say('The runtime stage carries node_modules with dev tooling and the build toolchain layer. `npm ci --omit=dev` in a separate deps stage and distroless as the base cut most of it.');
  s.tool('edit_file', { path: 'Dockerfile', old_string: 'FROM node:22-bookworm-slim\nWORKDIR /app', new_string: 'FROM gcr.io/distroless/nodejs22-debian12\nWORKDIR /app' }, 'Edited Dockerfile (1 replacement).');
  s.tool('bash', { command: 'docker build -t app:dev . >/dev/null && docker images app' }, exit(psqlTable(['REPOSITORY', 'TAG', 'IMAGE ID', 'CREATED', 'SIZE'], [['app', 'dev', '9a0b1c2d3e4f', '5 seconds ago', '236MB']])));
  s.say('1.12 GB → 236 MB: distroless Node 22 base, production dependencies only.');
}

export function moreWindows(s: Session): void {
  s.user('CI is still red on Windows, this time the lint job. Can you look?');
  const lint = crlf(Array.from({ length: 40 }, (_, i) => `C:\\actions-runner\\_work\\app\\app\\src\\${['auth-service', 'users-routes', 'rate-limiter', 'server'][i % 4]}.ts\r\n  ${i + 1}:${80 + (i % 5)}  error  Delete \`␍\`  prettier/prettier`).join('\n\n'));
  for (let i = 0; i < 3; i++) s.tool('bash', { command: 'npm run lint' }, exit(`${lint}\r\n\r\n✖ 40 problems (40 errors, 0 warnings)\r\n  40 errors and 0 warnings potentially fixable with the \`--fix\` option.\r\n`, 1), i === 1 ? 'Re-checking out first, in case the old checkout is stale.' : undefined);
  s.tool('bash', { command: 'git ls-files --eol src' }, exit(crlf(['auth-service.ts', 'db.ts', 'errors.ts', 'mailer.ts', 'rate-limiter.ts', 'server.ts', 'users-routes.ts'].map((f) => `i/lf    w/crlf  attr/text=auto          src/${f}`).join('\n'))));
  s.tool('read_file', { path: '.gitattributes' }, numbered('* text=auto\n*.txt text eol=lf\n*.sql text eol=lf\n'));
  s.tool('edit_file', { path: '.gitattributes', old_string: '* text=auto\n', new_string: '* text=auto eol=lf\n' }, 'Edited .gitattributes (1 replacement).');
  s.tool('bash', { command: 'git rm --cached -r . -q; git reset --hard -q; npm run lint' }, exit(''));
  s.tool('bash', { command: 'git ls-files --eol src' }, exit(crlf(['auth-service.ts', 'db.ts', 'errors.ts', 'mailer.ts', 'rate-limiter.ts', 'server.ts', 'users-routes.ts'].map((f) => `i/lf    w/lf    attr/text=auto eol=lf   src/${f}`).join('\n'))));
  s.tool('bash', { command: 'npm test' }, exit(crlf(testRun({ seed: 83, packages: ['packages\\api', 'packages\\auth'] }))));
  s.say('Prettier wants LF, and the Windows checkout had CRLF for source files. `* text=auto eol=lf` makes every text file LF in the working tree on all systems; lint passes.');
}

export function reviewFollowUp(s: Session, auth: string): void {
  s.user('#215 is up now (the route). Same focus please.');
  const route = "  router.post('/sessions/rotate', async (req: Request, res: Response, next: NextFunction) => {\n    const token = req.cookies?.session;\n    if (typeof token !== 'string') return res.status(401).json({ error: 'no_session' });\n    try {\n      const next = await auth.rotate(token);\n      if (!next) return res.status(401).json({ error: 'session_expired' });\n      res.cookie('session', next.token, { httpOnly: true, secure: true, sameSite: 'lax', expires: new Date(next.expiresAt) });\n      res.json({ ok: true });\n    } catch (err) {\n      next(err);\n    }\n  });\n";
  s.tool('bash', { command: 'git diff main...origin/session-rotate-route' }, exit(`diff --git a/src/users-routes.ts b/src/users-routes.ts\n--- a/src/users-routes.ts\n+++ b/src/users-routes.ts\n@@ -52,0 +53,13 @@\n${route.split('\n').map((l) => `+${l}`).join('\n')}`));
  s.tool('read_file', { path: 'src/users-routes.ts' }, numbered(material('src/users-routes.ts.txt')));
  s.tool('read_file', { path: 'src/auth-service.ts' }, numbered(auth));
  s.say('**`const next = await auth.rotate(token)` shadows the `next` callback**: in the `catch`, `next(err)` calls the session object, a TypeError, and the request hangs. Rename it `successor`.\n\n**No CSRF protection** on a cookie-authenticated POST that sets a cookie; `sameSite: lax` blocks cross-site POSTs in modern browsers, but add the CSRF check the other state-changing routes use.\n\n**No rate limit**: rotation creates rows; put it behind the limiter like /login.');
  s.user('Good catch on the shadowing. Anything about the cookie attributes?');
  s.say('They match /login (HttpOnly, Secure, SameSite=Lax, absolute expiry). Consider `path: "/"` explicitly and the `__Host-` prefix on the cookie name, which forces Secure, no Domain and path=/; it would have to change in both routes.');
  s.user('Write the review for #215.');
  s.tool('bash', { command: 'npx vitest run test/users-routes.test.ts' }, exit(testRun({ seed: 91, packages: ['packages/api'], logLines: 0.6 })));
  s.say('For the record, the branch passes its tests; none exercises the error path of the new route, which is why the shadowing went unnoticed.');
  s.user('Suggest a test for that error path.');
  s.say("```ts\nit('POST /sessions/rotate passes a store error on', async () => {\n  const app = testApp({ sessions: failingStore(new Error('db down')) });\n  const res = await request(app).post('/users/sessions/rotate').set('Cookie', 'session=abc');\n  expect(res.status).toBe(500);\n});\n```\nToday it would time out (the request never ends); after the rename it answers 500.");
  s.user('Write the review for #215, including the test.');
  s.say('## Review of #215\n\n1. **`next` shadowed** in the rotate route: the error path calls the session object. Rename the result.\n2. **CSRF**: add the same CSRF check as the other cookie-authenticated POSTs.\n3. **Rate limit** the route like /login.\n4. Nit: consider the `__Host-` cookie prefix (in both routes).\n\nRequesting changes for 1 to 3.');
}

export function moreSupport(s: Session): void {
  const questions: [string, string][] = [
    ['Is there a way to re-run only the failed jobs?', 'Yes: open the pipeline run and choose "Re-run failed jobs". Jobs that passed keep their results and artifacts.'],
    // biome-ignore lint/suspicious/noTemplateCurlyInString: quoted source and shell text, not templates
    ['Can I limit how many pipelines run at once for a branch?', 'Use `concurrency: { group: ${{ branch }}, cancel-in-progress: true }` at the top of the pipeline; a new push cancels the running pipeline of the same branch.'],
    ['Where do I see how many build minutes we used?', 'Organization settings → Billing → Usage. Minutes are per job, rounded up to the minute, with Linux 1x, Windows 2x and macOS 10x.'],
    ['Our Windows jobs are slow to start. Why?', 'Windows runners are provisioned on demand and take 1 to 3 minutes to boot. Larger plans can keep warm Windows runners (Settings → Runners → Warm pool).'],
    ['Can I run jobs on my own machines?', 'Yes, self-hosted runners: install the runner agent, register it with a token from Settings → Runners, and target it with `runs-on: [self-hosted, linux]`. Minutes on your own runners are free.'],
    ['How do secrets reach pull requests from forks?', 'They do not: pipelines triggered by forks run without secrets. A maintainer can approve a run with secrets after reviewing the change.'],
    ['Can a job depend on two others?', 'Yes: `needs: [build, lint]`. The job starts when both succeed; add `if: always()` to run it whatever they did.'],
    ['How do I pass files between jobs?', 'Upload them as artifacts in the first job (`orbit/upload-artifact@v2`) and download them in the next; artifacts are kept 30 days by default.'],
    ['Is there a matrix build?', 'Yes: `strategy: { matrix: { node: [20, 22], os: [linux, windows] } }` runs the job once per combination; `fail-fast: false` lets the others finish when one fails.'],
    ['Can I get a Slack message when main fails?', 'Settings → Notifications → Slack: connect the workspace, pick a channel and choose "Failures on the default branch".'],
    ['Why did my scheduled pipeline not run last night?', 'Scheduled pipelines pause after 60 days without activity on the repository; any push re-enables them. The pipeline page shows a banner when a schedule is paused.'],
    ['Thanks, that covers it.', 'Glad it helped. If the mirror problem comes back after the allowlist change, write to support@orbit-ci.example with a run id and we will look at the network logs.'],
  ];
  for (const [q, a] of questions) s.user(q).say(a);
}

export function moreAnalysis(s: Session): void {
  s.user('Is anything else off in March besides iOS, per country?');
  const table = (seed: number) => Array.from({ length: 18 }, (_, i) => `${['DE', 'FR', 'US', 'GB', 'NL', 'ES'][i % 6]}  ${['android', 'ios', 'web'][Math.floor(i / 6)]!.padEnd(8)}  ${(210000 + ((i * 7919 + seed) % 90000)).toFixed(2).padStart(12)}  ${(0.02 + ((i * 31 + seed) % 17) / 1000).toFixed(3)}`).join('\n');
  s.tool('run_python', { code: "df.groupby(['country', 'channel']).agg(revenue=('total_cents', lambda c: c.sum() / 100), cancel_rate=('status', lambda s: (s == 'cancelled').mean()))" }, `country channel     revenue  cancel_rate\n${table(3)}`);
  s.tool('run_python', { code: "df[df.created_at >= '2025-03-01'].groupby(['country', 'channel']).agg(revenue=('total_cents', lambda c: c.sum() / 100), cancel_rate=('status', lambda s: (s == 'cancelled').mean()))" }, `country channel     revenue  cancel_rate\n${table(5)}`);
  s.tool('run_python', { code: "df.head(40)" }, 'see above: same frame');
  s.say('Outside iOS, every country and channel is within 3% of February, and cancellation rates stay between 2% and 4%. The drop is the iOS app alone.');
  s.user('Make a chart for the incident review.');
  s.tool('run_python', { code: "ax = ios.groupby(ios.created_at.dt.date).total_cents.sum().div(100).plot(figsize=(10, 4), title='iOS revenue per day, March 2025 (USD)')\nax.axvline('2025-03-12', color='red', linestyle='--', label='5.12.0 released')\nax.legend(); plt.tight_layout(); plt.savefig('ios_revenue_march.png', dpi=150)" }, "<Figure size 1000x400 with 1 Axes>\nSaved ios_revenue_march.png (58,211 bytes)");
  s.tool('run_python', { code: "import os; os.path.getsize('ios_revenue_march.png')" }, '58211');
  s.say('Saved `ios_revenue_march.png`: iOS revenue per day in March with the 5.12.0 release marked; the step down on March 12 is plain.');
}

export function finalChecks(s: Session, packages: string[]): void {
  s.user('Run the whole thing one last time and grep the docs for the old name.');
  s.tool('bash', { command: 'npm test' }, exit(testRun({ seed: 123, packages, logLines: 0.45 })));
  s.tool('search', { pattern: 'invalid_credentials', glob: 'docs/**' }, grep(/invalid_credentials/, { 'docs/api.md': 'nothing' }));
  s.tool('bash', { command: 'npx tsc --noEmit && npx eslint .' }, exit(''));
  s.say('All suites pass, type check and lint are clean, and the docs no longer mention `invalid_credentials`.');
}

export function vitestUpgrade(s: Session): void {
  s.user('Now vitest 1 → 3 please.');
  s.tool('bash', { command: 'npm install -D vitest@3' }, exit(material('logs/npm-install.log')));
  const pkgs = ['packages/api', 'packages/auth', 'packages/orders'];
  s.tool('bash', { command: 'npm test' }, exit(testRun({ seed: 132, packages: pkgs, failing: ['renders the verification mail', 'retries a 4xx'] }), 1));
  s.tool('read_file', { path: 'vitest.config.ts' }, numbered("import { defineConfig } from 'vitest/config';\n\nexport default defineConfig({\n  test: {\n    environment: 'node',\n    poolOptions: { threads: { singleThread: true } },\n    setupFiles: ['test/setup.ts'],\n  },\n});\n"));
  s.say('vitest 3 changed the pool default to forks and the `poolOptions` key; the mailer tests rely on module mocks shared across files, which only worked with the single thread. Switching to `pool: "forks"` with `singleFork`.');
  s.tool('edit_file', { path: 'vitest.config.ts', old_string: "    poolOptions: { threads: { singleThread: true } },", new_string: "    pool: 'forks',\n    poolOptions: { forks: { singleFork: true } }," }, 'Edited vitest.config.ts (1 replacement).');
  s.tool('bash', { command: 'npm test' }, exit(testRun({ seed: 133, packages: pkgs })));
  s.tool('bash', { command: 'npm test' }, exit(testRun({ seed: 133, packages: pkgs })), 'Once more to check it is stable.');
  s.say('vitest 3 runs with `pool: "forks"` and a single fork (what the mailer mocks need); the suite passes twice in a row.');
}

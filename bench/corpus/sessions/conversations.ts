import { diff, grep, material, numbered, psqlTable, testRun } from '../material.ts';
import { finalChecks, moreAnalysis, moreSupport, reviewFollowUp, vitestUpgrade } from './follow-ups.ts';
import { random, Session, type Transcript } from '../session.ts';
import { CODING_TOOLS, DATA_TOOLS } from '../tools.ts';

/** Longer, many-turn sessions: a review, a support chat without tools, a data analysis, a repository-wide change, an upgrade. */

const exit = (output: string, code = 0) => `${output}\n[exit code ${code}]`;

export function codeReview(): Transcript {
  const routes = material('src/users-routes.ts.txt');
  const auth = material('src/auth-service.ts.txt');
  const s = new Session('code-review-09', {
    kind: 'coding-agent',
    model: 'anthropic/claude-opus-4-1',
    system: 'You review pull requests. Read the diff and the files it touches, then comment precisely: file, line, problem, suggested fix. Be direct.',
    tools: CODING_TOOLS,
  });
  s.user('Review PR #214 (branch `session-rotation`). Focus on security.');
  const rotated = auth.replace('  async logout(token: string): Promise<void> {', '  async rotate(token: string): Promise<Session | null> {\n    const session = await this.validateSession(token);\n    if (!session) return null;\n    const next = await this.createSession(session.userId);\n    return next;\n  }\n\n  async logout(token: string): Promise<void> {');
  const prDiff = diff('src/auth-service.ts', auth, rotated);
  s.tool('bash', { command: 'git fetch origin session-rotation && git diff main...origin/session-rotation' }, exit(prDiff));
  s.tool('read_file', { path: 'src/auth-service.ts' }, numbered(rotated));
  s.tool('read_file', { path: 'src/users-routes.ts' }, numbered(routes));
  s.say('**src/auth-service.ts, `rotate`**: the old session is never deleted, so a stolen token stays valid for its full 30 days after rotation. Delete it (in the same transaction as the insert) before returning the new one.\n\n**No route calls `rotate`** yet: is the route in another PR?');
  s.user('The route is in #215. What about concurrent rotations, two tabs refreshing at once?');
  s.tool('search', { pattern: 'sessions\\.(insert|delete|find)' }, grep(/sessions\.(insert|delete|find)/, { 'src/auth-service.ts': rotated }));
  // biome-ignore lint/suspicious/noTemplateCurlyInString: quoted source and shell text, not templates
  s.tool('read_file', { path: 'src/db.ts', offset: 60, limit: 30 }, numbered("  sessions: {\n    insert: (s: Session) => sql`insert into sessions ${sql(s)}`.then(() => undefined),\n    find: (token: string) => sql<Session[]>`select * from sessions where token = ${token}`.then((r) => r[0] ?? null),\n    delete: (token: string) => sql`delete from sessions where token = ${token}`.then(() => undefined),\n  },", 61));
  s.say('Two tabs rotating the same token both pass `validateSession` and each gets a new session: two live successors, and whichever tab loses keeps working. Make the delete conditional and check it: `delete from sessions where token = $1 returning user_id`; only the caller that deleted the row creates the successor, the other gets null (or, kinder, the same successor within a short grace window).');
  s.user('Ok. Anything else in the file while you are there?');
  s.tool('read_file', { path: 'src/auth-service.ts' }, numbered(rotated));
  s.say('- `login` for an unknown email hashes the password to even out timing, good; but `verifyPassword` on a malformed stored hash returns early, which is a (minor) timing tell for corrupted rows.\n- `register` sends the mail inside the request: an SMTP outage becomes a failed registration. An outbox would decouple them.\n- `SESSION_TTL_MS` is absolute; there is no idle timeout.');
  s.user('Please write the review comment for #214 as markdown I can paste.');
  s.say(`## Review of #214\n\n1. **Old session stays valid after rotation** (\`src/auth-service.ts\`, \`rotate\`): delete the presented session when issuing its successor, in one transaction.\n2. **Concurrent rotation forks the session**: make the delete conditional (\`delete ... returning\`) and let only the winner create the successor; consider a short grace window returning the same successor.\n3. Minor: \`verifyPassword\` returns early on malformed hashes.\n\n\`\`\`ts\nasync rotate(token: string): Promise<Session | null> {\n  return this.db.transaction(async (tx) => {\n    const old = await tx.sessions.deleteReturning(token);\n    if (!old || old.expiresAt <= this.now()) return null;\n    return this.createSession(old.userId, tx);\n  });\n}\n\`\`\`\n\nRequesting changes for 1 and 2.`);
  reviewFollowUp(s, rotated);
  return s.build();
}

export function supportChat(): Transcript {
  const s = new Session('support-chat-10', {
    kind: 'chat',
    model: 'openai/gpt-4o-mini',
    system: 'You are the support assistant of Orbit CI. Answer from the documentation you know; when unsure, say so and suggest contacting support@orbit-ci.example.',
  });
  const log = material('logs/docker-build.log');
  s.user(`Hi, my build fails, log below:\n\n\`\`\`\n${log}\n\`\`\``);
  s.say('The build fails at `npm ci` with `ECONNRESET`: the connection to the npm registry was reset. That is a network problem between the runner and the registry, not your code. Does it fail every time, or only sometimes?');
  s.user('Every time since this morning. Same log:\n\n```\n' + log + '\n```');
  s.say('Since it started this morning and fails every time, check:\n1. Do you use a registry mirror or proxy (an `.npmrc` in the repository, or `NPM_CONFIG_REGISTRY` in the pipeline settings)?\n2. Did anything change in the pipeline settings today?\n\nMeanwhile, adding retries helps with transient resets: `npm config set fetch-retries 5` before `npm ci`.');
  // biome-ignore lint/suspicious/noTemplateCurlyInString: quoted source and shell text, not templates
  s.user('We do have an .npmrc:\n\n```\nregistry=https://npm.internal.example/\nalways-auth=true\n//npm.internal.example/:_authToken=${NPM_TOKEN}\n```');
  s.say('Then the runner talks to `npm.internal.example`, your internal mirror. ECONNRESET from there every time usually means the mirror refuses the runner: an expired `NPM_TOKEN` secret, or the runners\' egress IPs no longer allowed. Orbit CI published new egress ranges last week (see Settings → Network → Egress IPs); if your mirror allowlists IPs, add the new ranges.');
  s.user('That was it, the IP allowlist. Thanks! One more question: how do I cache node_modules between builds?');
  // biome-ignore lint/suspicious/noTemplateCurlyInString: quoted source and shell text, not templates
  s.say('Cache the npm cache directory, not node_modules, keyed on the lockfile:\n\n```yaml\nsteps:\n  - uses: orbit/cache@v3\n    with:\n      path: ~/.npm\n      key: npm-${{ hashFiles(\'package-lock.json\') }}\n  - run: npm ci\n```\n\n`npm ci` deletes node_modules anyway; with the cache warm it installs from disk.');
  for (const question of ['Does the cache work with Docker builds too?', 'And for pnpm?', 'How long are caches kept?', 'Can two branches share one cache?']) {
    s.user(question);
    s.say(
      {
        'Does the cache work with Docker builds too?': 'Not directly: a Docker build runs in its own context. Use a BuildKit cache mount (`RUN --mount=type=cache,target=/root/.npm npm ci`) and enable "Docker layer caching" in the pipeline settings so the mount survives between builds.',
        'And for pnpm?': 'Same idea with the pnpm store: `path: ~/.local/share/pnpm/store`, key on `pnpm-lock.yaml`, then `pnpm install --frozen-lockfile`.',
        'How long are caches kept?': 'Seven days after their last use, and at most 10 GB per project; the least recently used entries go first.',
        'Can two branches share one cache?': 'A branch reads caches from its own branch first, then from the default branch. It never reads another feature branch\'s cache (so a pull request cannot poison main\'s cache).',
      }[question]!,
    );
  }
  moreSupport(s);
  return s.build();
}

export function dataAnalysis(): Transcript {
  const rnd = random(101);
  const s = new Session('data-analysis-11', {
    kind: 'data-agent',
    model: 'openai/o4-mini',
    system: 'You are a data analyst with a Python kernel (pandas, matplotlib) and read access to the analytics database. Show your work briefly; state numbers with their units.',
    tools: DATA_TOOLS,
  });
  s.user('Why did revenue drop in March? Use the orders tables.');
  const months = ['2024-10', '2024-11', '2024-12', '2025-01', '2025-02', '2025-03'];
  s.tool('sql_query', { sql: "select date_trunc('month', created_at) as month, count(*) as orders, sum(total_cents)/100.0 as revenue from orders where status in ('paid','shipped') group by 1 order by 1" }, psqlTable(['month', 'orders', 'revenue'], months.map((m, i) => [`${m}-01 00:00:00+00`, 41000 + i * 900 - (i === 5 ? 6100 : 0), (2_310_000 + i * 41_000 - (i === 5 ? 402_000 : 0)).toFixed(2)])));
  const frame = (seed: number) => {
    const r = random(seed);
    const head = ['   order_id  customer_id   status  total_cents           created_at country  channel'];
    for (let i = 0; i < 40; i++) head.push(`${String(i).padEnd(3)} ${String(8_100_000 + Math.floor(r() * 99999)).padStart(9)} ${String(Math.floor(r() * 200000)).padStart(12)} ${['paid', 'shipped', 'cancelled', 'pending'][Math.floor(r() * 4)]!.padStart(8)} ${String(Math.floor(r() * 30000)).padStart(12)} 2025-03-${String(1 + Math.floor(r() * 28)).padStart(2, '0')} ${String(Math.floor(r() * 24)).padStart(2, '0')}:00:00 ${['DE', 'FR', 'US', 'GB', 'NL'][Math.floor(r() * 5)]!.padStart(7)} ${['web', 'ios', 'android'][Math.floor(r() * 3)]!.padStart(8)}`);
    return `${head.join('\n')}\n\n[412,337 rows x 7 columns]`;
  };
  const load = "df = pd.read_sql(\"select * from orders where created_at >= '2025-01-01'\", conn)\ndf.head(40)";
  s.tool('run_python', { code: load }, frame(1));
  s.tool('run_python', { code: "df.groupby([df.created_at.dt.to_period('M'), 'channel']).total_cents.sum().unstack() / 100" }, 'channel        android          ios          web\ncreated_at                                     \n2025-01     612210.41    701877.19   1034412.88\n2025-02     633901.12    722310.55   1061044.07\n2025-03     641002.77    298114.02   1071663.31');
  s.say('Revenue from iOS fell by about 59% in March (722k → 298k), while web and Android held. Looking at iOS orders by day.');
  const days = Array.from({ length: 31 }, (_, d) => `2025-03-${String(d + 1).padStart(2, '0')}    ${String(d < 11 ? 24000 + Math.floor(rnd() * 2000) : 4100 + Math.floor(rnd() * 900)).padStart(6)}    ${String(d < 11 ? 0.031 + rnd() * 0.004 : 0.412 + rnd() * 0.05).slice(0, 5)}`).join('\n');
  s.tool('run_python', { code: "ios = df[df.channel == 'ios']\nios.groupby(ios.created_at.dt.date).agg(revenue=('total_cents', 'sum'), cancel_rate=('status', lambda s: (s == 'cancelled').mean()))" }, `date          revenue  cancel_rate\n${days}`);
  s.say('From March 12, iOS cancellations jump from about 3% to about 41%. Checking the app versions.');
  s.tool('sql_query', { sql: "select app_version, count(*) filter (where status = 'cancelled') as cancelled, count(*) as total from orders where channel = 'ios' and created_at >= '2025-03-01' group by 1 order by 1" }, psqlTable(['app_version', 'cancelled', 'total'], [['5.11.0', 412, 13021], ['5.11.1', 390, 12200], ['5.12.0', 15230, 17102]]));
  s.tool('run_python', { code: load }, frame(1));
  s.tool('sql_query', { sql: "select error_code, count(*) from payment_attempts where app_version = '5.12.0' group by 1 order by 2 desc limit 10" }, psqlTable(['error_code', 'count'], [['apple_pay_merchant_invalid', 14870], ['card_declined', 203], ['insufficient_funds', 97], ['network_error', 41]]));
  s.say('Cause: iOS app 5.12.0 (released March 12) fails Apple Pay with `apple_pay_merchant_invalid` for about 87% of its orders, which are then cancelled. iOS revenue fell from 722k to 298k (USD), about 424k of the 402k total drop (the other channels grew slightly). The merchant identifier in 5.12.0 is the first thing to check.');
  s.user('Can you quantify the lost revenue per day since the release?');
  s.tool('run_python', { code: "base = ios[ios.created_at < '2025-03-12'].groupby(ios.created_at.dt.date).total_cents.sum().mean()\nafter = ios[ios.created_at >= '2025-03-12'].groupby(ios.created_at.dt.date).total_cents.sum()\n((base - after) / 100).describe()" }, 'count       20.000000\nmean     15212.884500\nstd        612.113020\nmin      14011.500000\n25%      14790.220000\n50%      15198.010000\n75%      15630.870000\nmax      16402.330000\nName: total_cents, dtype: float64');
  s.say('About 15,200 USD a day (between 14,000 and 16,400) since March 12: about 304,000 USD over the 20 days.');
  moreAnalysis(s);
  return s.build();
}

export function repoWideRename(): Transcript {
  const files: Record<string, string> = {
    'src/auth-service.ts': material('src/auth-service.ts.txt'),
    'src/users-routes.ts': material('src/users-routes.ts.txt'),
    'src/rate-limiter.ts': material('src/rate-limiter.ts.txt'),
  };
  const s = new Session('rename-error-codes-12', { kind: 'coding-agent', model: 'xai/grok-4', system: 'You are a careful coding agent. Make repository-wide changes file by file, verifying each with the type checker and tests.', tools: CODING_TOOLS });
  s.user('Rename the error code `invalid_credentials` to `wrong_credentials` everywhere (code, tests, docs), and keep the old one accepted by the client SDK for one release.');
  s.tool('search', { pattern: 'invalid_credentials' }, grep(/invalid_credentials/, files) + '\ntest/auth-service.test.ts:41:    await expect(service.login(email, "nope")).rejects.toMatchObject({ code: "invalid_credentials" });\ntest/users-routes.test.ts:77:    expect(res.body.error).toBe("invalid_credentials");\ndocs/api.md:112:| `invalid_credentials` | 401 | Wrong email or password. |\nsdk/src/errors.ts:9:  | "invalid_credentials"');
  for (const path of ['src/auth-service.ts', 'src/users-routes.ts']) {
    s.tool('read_file', { path }, numbered(files[path]!));
    const count = files[path]!.split('invalid_credentials').length - 1;
    if (count) {
      s.tool('bash', { command: `sed -i 's/invalid_credentials/wrong_credentials/g' ${path} && git diff --stat ${path}` }, exit(` ${path} | ${count * 2} ${'+'.repeat(count)}${'-'.repeat(count)}\n 1 file changed, ${count} insertions(+), ${count} deletions(-)`));
      files[path] = files[path]!.replaceAll('invalid_credentials', 'wrong_credentials');
    }
    s.tool('bash', { command: 'npx tsc --noEmit' }, exit(''));
  }
  for (const path of ['test/auth-service.test.ts', 'test/users-routes.test.ts', 'docs/api.md']) s.tool('edit_file', { path, old_string: 'invalid_credentials', new_string: 'wrong_credentials' }, `Edited ${path} (1 replacement).`);
  s.tool('read_file', { path: 'sdk/src/errors.ts' }, numbered('export type ErrorCode =\n  | "weak_password"\n  | "email_taken"\n  | "email_unverified"\n  | "account_locked"\n  | "rate_limited"\n  | "invalid_body"\n  | "invalid_credentials";\n\nexport function isRetryable(code: ErrorCode): boolean {\n  return code === "rate_limited";\n}\n'));
  s.tool('edit_file', { path: 'sdk/src/errors.ts', old_string: '  | "invalid_credentials";', new_string: '  | "wrong_credentials"\n  /** @deprecated since 2.4: the server sends wrong_credentials; kept one release for older servers. */\n  | "invalid_credentials";' }, 'Edited sdk/src/errors.ts (1 replacement).');
  const packages = ['packages/api', 'packages/auth', 'packages/orders', 'packages/billing'];
  s.tool('bash', { command: 'npm test' }, exit(testRun({ seed: 121, packages, logLines: 0.45 })));
  s.tool('bash', { command: 'npm test --workspace sdk' }, exit(testRun({ seed: 122, packages: ['sdk'], logLines: 0 })));
  s.tool('search', { pattern: 'invalid_credentials' }, 'sdk/src/errors.ts:10:  | "invalid_credentials";');
  s.tool('bash', { command: 'npm test' }, exit(testRun({ seed: 121, packages, logLines: 0.45 })), 'Running the whole suite once more after the SDK change.');
  s.say('Renamed `invalid_credentials` to `wrong_credentials` in the service, routes, tests and docs/api.md. The SDK accepts both, the old one marked deprecated for one release. Type check and all suites pass; the only remaining occurrence is the deprecated SDK alias.');
  finalChecks(s, packages);
  return s.build();
}

export function dependencyUpgrade(): Transcript {
  const s = new Session('dependency-upgrade-13', { kind: 'coding-agent', model: 'mistral/mistral-large-latest', system: 'You maintain this Node.js service. Upgrade dependencies safely: one major version at a time, run the checks after each, and stop to ask before changing application behaviour.', tools: CODING_TOOLS });
  s.user('Upgrade eslint to v9 (flat config) and fix whatever breaks.');
  s.tool('bash', { command: 'npm outdated' }, exit(psqlTable(['Package', 'Current', 'Wanted', 'Latest', 'Location'], [['eslint', '8.57.1', '8.57.1', '9.22.0', 'node_modules/eslint'], ['@typescript-eslint/eslint-plugin', '6.21.0', '6.21.0', '8.26.1', 'node_modules/@typescript-eslint/eslint-plugin'], ['@typescript-eslint/parser', '6.21.0', '6.21.0', '8.26.1', 'node_modules/@typescript-eslint/parser'], ['vitest', '1.6.0', '1.6.1', '3.0.8', 'node_modules/vitest']]), 1));
  s.tool('bash', { command: 'npm install -D eslint@9 typescript-eslint@8 @eslint/js@9' }, exit(material('logs/npm-install.log')));
  const lintErrors = Array.from({ length: 60 }, (_, i) => `/home/dev/app/src/${['auth-service', 'users-routes', 'rate-limiter', 'server', 'db', 'mailer'][i % 6]}.ts\n  ${10 + i}:${3 + (i % 9)}  error  ${['Unexpected any. Specify a different type', "'req' is defined but never used", 'Promise returned in function argument where a void return was expected'][i % 3]}  ${['@typescript-eslint/no-explicit-any', '@typescript-eslint/no-unused-vars', '@typescript-eslint/no-misused-promises'][i % 3]}\n`).join('\n');
  s.tool('bash', { command: 'npx eslint .' }, exit('Oops! Something went wrong! :(\n\nESLint: 9.22.0\n\nESLint couldn\'t find an eslint.config.(js|mjs|cjs) file.\n\nFrom ESLint v9.0.0, the default configuration file is now eslint.config.js.\nIf you are using a .eslintrc.* file, please follow the migration guide\nto update your configuration file to the new format:\n\nhttps://eslint.org/docs/latest/use/configure/migration-guide\n', 2));
  s.tool('read_file', { path: '.eslintrc.json' }, numbered('{\n  "root": true,\n  "parser": "@typescript-eslint/parser",\n  "parserOptions": { "project": "./tsconfig.json" },\n  "plugins": ["@typescript-eslint"],\n  "extends": ["eslint:recommended", "plugin:@typescript-eslint/recommended-type-checked"],\n  "ignorePatterns": ["dist", "coverage"]\n}\n'));
  s.tool('write_file', { path: 'eslint.config.js', content: "import js from '@eslint/js';\nimport tseslint from 'typescript-eslint';\n\nexport default tseslint.config(\n  { ignores: ['dist', 'coverage'] },\n  js.configs.recommended,\n  ...tseslint.configs.recommendedTypeChecked,\n  { languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } } },\n);\n" }, 'Wrote eslint.config.js (9 lines).');
  for (let i = 0; i < 3; i++) s.tool('bash', { command: 'npx eslint .' }, exit(`${lintErrors}\n✖ 60 problems (60 errors, 0 warnings)\n`, 1), i === 0 ? undefined : 'Checking whether the count is stable before fixing (cache off).');
  s.say('The new recommended-type-checked set flags 60 problems that v6 did not: 20 `no-explicit-any`, 20 unused `req`, 20 misused promises in Express handlers. The first two are mechanical; the misused-promises ones change how errors reach Express, so I will ask before touching them. Should I fix the mechanical ones and turn `no-misused-promises` to `warn` for now?');
  s.user('Yes, do that.');
  s.tool('bash', { command: "npx eslint . --fix --rule '@typescript-eslint/no-misused-promises: warn' && npx eslint . --max-warnings 20" }, exit(`${lintErrors.split('\n\n').filter((_, i) => i % 3 === 2).join('\n\n').replace(/error/g, 'warning')}\n✖ 20 problems (0 errors, 20 warnings)\n`));
  s.tool('bash', { command: 'npm test' }, exit(testRun({ seed: 131, packages: ['packages/api', 'packages/auth', 'packages/orders'] })));
  s.tool('bash', { command: 'rm .eslintrc.json && git status --short' }, exit(' M package.json\n M package-lock.json\n D .eslintrc.json\n?? eslint.config.js\n M src/auth-service.ts\n M src/db.ts\n M src/mailer.ts\n M src/rate-limiter.ts\n M src/server.ts\n M src/users-routes.ts'));
  s.say('eslint 9 with a flat config (`eslint.config.js`, typescript-eslint 8); `.eslintrc.json` removed. 40 mechanical problems fixed; `no-misused-promises` is a warning (20 left) until we decide how async handlers should pass errors on. Tests pass.');
  vitestUpgrade(s);
  return s.build();
}

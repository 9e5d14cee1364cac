import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { memoryAfterGcAt } from '../../test/reliability/process-memory.ts';
import { type ChildServer, startServer } from '../lib/children.ts';
import { REDIRECT_URI } from '../lib/oauth-flow.ts';
import { Origin } from './http.ts';
import { type AfterGc, judge } from './judge.ts';
import { DOC_MINUTES, parseOptions, type SoakOptions, USAGE } from './options.ts';
import { drawPlot } from './plot.ts';
import { PRIMING_CALLS, primeGateway } from './prime.ts';
import { createTenants, seedAccounts, signIn } from './population.ts';
import { Probes } from './probes.ts';
import { Recorder } from './recorder.ts';
import { type SoakReport, summaryText, updateDoc, windowLine } from './report.ts';
import { runTraffic } from './run.ts';
import { type MappedMemory, mappedGrowth, mappedMemory } from './smaps.ts';
import { freePort, type ServiceProcess, startService } from './service-process.ts';

/**
 * `npm run soak -- --minutes 5`: both services in their own processes, as
 * their npm scripts start them, under a steady mix of realistic traffic for
 * minutes (bench/soak/traffic.ts), with p50/p99 per traffic type, errors and
 * each process's memory recorded every window. Prints a summary, judges
 * "zero errors" and "memory flat" (bench/soak/judge.ts), writes the windows
 * to bench/results/soak-<time>.json and draws them as an SVG. A run of at
 * least five minutes also writes docs/soak.svg and the Soak section of
 * docs/RELIABILITY.md; shorter ones leave docs/ alone.
 *
 * Exit code: 0 when both verdicts pass, 2 when one fails, 1 when the soak
 * itself could not run. Not a test: it is never run by `npm test` or CI.
 */
const ROOT = new URL('../../', import.meta.url);
const RESULTS = new URL('bench/results/', ROOT);
const FAKE_BEHAVIOUR = { latencyMs: 300, chunkDelayMs: 25, chunks: 16 };
const USERS = 30;
const FAMILIES = 8;
const TENANTS = 2;
/** Setup and teardown on top of the run, after which the watchdog ends the soak. */
const SETUP_LIMIT_S = 240;

const log = (line: string) => process.stderr.write(`soak: ${line}\n`);

let options: SoakOptions;
try {
  options = parseOptions(process.argv.slice(2));
} catch (err) {
  process.stderr.write(`soak: ${(err as Error).message}\n${USAGE}\n`);
  process.exit(1);
}
const seconds = Math.round((options.minutes * 60) / options.windowSeconds) * options.windowSeconds;
// The warm-up holds the steepest start-up growth (JIT, pools, the heap growing towards its working size, which at this
// rate takes V8 a few minutes and a full collection): 30 % of the run, at most three minutes, in whole windows (at least one).
const warmupS = Math.max(options.windowSeconds, Math.floor(Math.min(180, seconds * 0.3) / options.windowSeconds) * options.windowSeconds);
const watchdog = setTimeout(() => {
  log(`over its ${seconds + SETUP_LIMIT_S} s limit; stopping`);
  process.exit(1);
}, (seconds + SETUP_LIMIT_S) * 1000);
watchdog.unref();
process.on('SIGINT', () => process.exit(130));

/** PostgreSQL and Redis when the caller names them; else each service on SQLite in a fresh directory, stores in process. */
const external = Object.fromEntries(
  ['AUTH_DATABASE_URL', 'GATEWAY_DATABASE_URL', 'REDIS_URL'].flatMap((k) => (process.env[k] ? [[k, process.env[k]]] : [])),
) as Record<string, string>;
const backend = [
  `account service on ${external['AUTH_DATABASE_URL'] ? 'PostgreSQL' : 'SQLite'}`,
  `gateway on ${external['GATEWAY_DATABASE_URL'] ? 'PostgreSQL' : 'SQLite'}`,
  external['REDIS_URL'] ? 'Redis for limits, cache and dedup' : 'limits, cache and dedup in process',
].join(', ');

const dataDir = mkdtempSync(join(tmpdir(), 'soak-'));
process.on('exit', () => rmSync(dataDir, { recursive: true, force: true }));
const runId = randomBytes(4).toString('hex');
const secret = () => randomBytes(32).toString('base64url');

const children: { fake?: ChildServer<{ url: string }>; auth?: ServiceProcess; gateway?: ServiceProcess } = {};
const origins: Origin[] = [];
let exitCode = 1;
try {
  const started = new Date();
  log(`${seconds} s of traffic (warm-up ${warmupS} s), windows of ${options.windowSeconds} s, scale ${options.scale}, seed ${options.seed}; ${backend}`);
  children.fake = await startServer<{ url: string }>('fake-provider', new URL('../servers/fake-provider.ts', import.meta.url), {
    FAKE_BEHAVIOUR: JSON.stringify(FAKE_BEHAVIOUR),
  });
  const [authPort, gatewayPort] = [await freePort(), await freePort()];
  const authUrl = `http://127.0.0.1:${authPort}`;
  const gatewayUrl = `http://127.0.0.1:${gatewayPort}`;
  const apiKey = secret();
  const authEnv: Record<string, string> = {
    DATA_DIR: join(dataDir, 'auth'),
    AUTH_HOST: '127.0.0.1',
    AUTH_PORT: String(authPort),
    AUTH_BASE_URL: authUrl,
    AUTH_API_KEY: apiKey,
    AUTH_ENCRYPTION_KEY: secret(),
    // OAuth on, its endpoints public, as for agents and desktop clients.
    OAUTH_CLIENT_ID: 'soak-web',
    OAUTH_CLIENT_SECRET: secret(),
    OAUTH_CLIENT_REDIRECT_URIS: REDIRECT_URI,
    OAUTH_PUBLIC_ENDPOINTS: 'true',
    ...(external['AUTH_DATABASE_URL'] ? { AUTH_DATABASE_URL: external['AUTH_DATABASE_URL'] } : {}),
    ...(external['REDIS_URL'] ? { REDIS_URL: external['REDIS_URL'] } : {}),
  };
  const gatewayEnv: Record<string, string> = {
    DATA_DIR: join(dataDir, 'gateway'),
    GATEWAY_HOST: '127.0.0.1',
    GATEWAY_PORT: String(gatewayPort),
    GATEWAY_BASE_URL: gatewayUrl,
    GATEWAY_ENCRYPTION_KEY: secret(),
    // The fake provider is on loopback.
    GATEWAY_ALLOW_PRIVATE_UPSTREAMS: '127.0.0.1',
    // The in-process cache is a ring whose pages the kernel commits as it first fills them: at its default 64 MiB it
    // would still be filling at the end of the run, growth that is the cache doing its job. At 1 MiB it fills within the
    // warm-up, so any growth after it is something else.
    GATEWAY_CACHE_MAX_BYTES: String(2 ** 20),
    ...(external['GATEWAY_DATABASE_URL'] ? { GATEWAY_DATABASE_URL: external['GATEWAY_DATABASE_URL'] } : {}),
    ...(external['REDIS_URL'] ? { REDIS_URL: external['REDIS_URL'] } : {}),
  };
  const users = Math.ceil(USERS * options.scale);
  log(`registering and verifying ${users} accounts`);
  const seeded = await seedAccounts(authEnv, runId, users);
  log('starting the account service and the gateway');
  [children.auth, children.gateway] = await Promise.all([
    startService('auth', new URL('src/auth/main.ts', ROOT), authUrl, authEnv, true),
    startService('gateway', new URL('src/gateway/main.ts', ROOT), gatewayUrl, gatewayEnv, true),
  ]);
  const auth = new Origin(authUrl, 16);
  const gateway = new Origin(gatewayUrl, 64);
  origins.push(auth, gateway);
  log(`signing ${users} users in (a session and a personal access token each), ${FAMILIES} OAuth authorizations, ${TENANTS} gateway workspaces`);
  const { users: signedIn, families } = await signIn(auth, apiKey, seeded, FAMILIES);
  const tenants = await createTenants(gateway, runId, children.fake.info.url, TENANTS);
  const primer = new Origin(gatewayUrl, 128);
  log(`priming the gateway: ${PRIMING_CALLS} new questions, half streamed (its native memory to its working size, prime.ts)`);
  const primingStarted = performance.now();
  const primed = await primeGateway(primer, tenants, runId).finally(() => primer.close());
  log(`primed in ${((performance.now() - primingStarted) / 1000).toFixed(0)} s, ${primed.failed} failed${primed.first ? `, the first: ${primed.first}` : ''}`);

  const recorder = new Recorder(performance.now());
  // A priming call that failed is a failure of the run like any other.
  for (let i = 0; i < primed.failed; i++) recorder.fail('priming', primed.first ?? '');
  const probes = new Probes(
    [
      { name: 'auth', pid: children.auth.pid, metricsUrl: `${authUrl}/metrics` },
      { name: 'gateway', pid: children.gateway.pid, metricsUrl: `${gatewayUrl}/metrics` },
      { name: 'fake provider', pid: children.fake.pid },
    ],
    recorder,
  );
  // The memory verdict's two readings (judge.ts), each after a forced full GC, taken while the traffic runs: at the end
  // of the warm-up and a second before the end of the run.
  const services = [
    { name: 'auth', process: children.auth, url: authUrl },
    { name: 'gateway', process: children.gateway, url: gatewayUrl },
  ];
  // Beside each reading, where the RSS is, mapping by mapping (smaps.ts): what tells native growth's place.
  const mapped: Record<string, { warm?: MappedMemory; end?: MappedMemory }> = { auth: {}, gateway: {} };
  const readAfterGc = async (when: 'warm' | 'end'): Promise<Record<string, AfterGc>> =>
    Object.fromEntries(
      await Promise.all(
        services.map(async ({ name, process: p, url }) => {
          if (!p.inspector) throw new Error(`${name} printed no inspector address`);
          const memory = await memoryAfterGcAt(p.inspector, url, name);
          mapped[name]![when] = mappedMemory(p.pid);
          return [name, memory] as const;
        }),
      ),
    );
  const gcReadings = {
    warm: sleep(warmupS * 1000).then(() => readAfterGc('warm')),
    end: sleep(Math.max(warmupS + 1, seconds - 1) * 1000).then(() => readAfterGc('end')),
  };
  // Awaited below; a failed reading must not be an unhandled rejection meanwhile.
  for (const reading of Object.values(gcReadings)) reading.catch(() => {});
  log('traffic started');
  const traffic = await runTraffic(
    { auth, gateway, apiKey, population: { users: signedIn, families, tenants }, runId },
    { seconds, windowSeconds: options.windowSeconds, scale: options.scale, seed: options.seed },
    recorder,
    probes,
    (i) => log(windowLine(recorder.windows[i]!)),
  );
  await Promise.all(origins.map((o) => o.close()));
  const exitCodes = { auth: await children.auth.stop(), gateway: await children.gateway.stop() };
  const serverErrorLines = Object.fromEntries(
    [children.auth, children.gateway].map((s) => {
      const counts = s.logCounts();
      return [s.name, (counts['error'] ?? 0) + (counts['fatal'] ?? 0) + (counts['stderr'] ?? 0)];
    }),
  );
  const [warmGc, endGc] = [await gcReadings.warm, await gcReadings.end];
  const afterGc = Object.fromEntries(services.map(({ name }) => [name, { warm: warmGc[name]!, end: endGc[name]! }]));
  const verdict = judge({ recorder, samples: probes.samples, services: ['auth', 'gateway'], warmupS, runS: seconds, serverErrorLines, exitCodes, afterGc });

  const report: SoakReport = {
    date: `${started.toISOString().slice(0, 16).replace('T', ' ')} UTC`,
    node: process.version,
    machine: `${availableParallelism()} cores (${cpus()[0]?.model ?? 'unknown CPU'}), ${process.platform}`,
    backend,
    options,
    seconds,
    warmupS,
    population: { users, families: FAMILIES, tenants: TENANTS },
    fakeBehaviour: FAKE_BEHAVIOUR,
    traffic,
    logCounts: { auth: children.auth.logCounts(), gateway: children.gateway.logCounts() },
    notableLogLines: { auth: children.auth.notableLines(), gateway: children.gateway.notableLines() },
    failureExamples: recorder.examples,
    verdict,
    windows: recorder.windows,
    rssSamples: probes.samples,
    mappedGrowth: Object.fromEntries(
      Object.entries(mapped).flatMap(([name, { warm, end }]) => (warm && end ? [[name, mappedGrowth(warm, end)] as const] : [])),
    ),
  };
  const stamp = started.toISOString().slice(0, 19).replaceAll(':', '-');
  mkdirSync(RESULTS, { recursive: true });
  const json = new URL(`soak-${stamp}.json`, RESULTS);
  writeFileSync(json, `${JSON.stringify(report, null, 1)}\n`);
  const toDocs = options.minutes >= DOC_MINUTES;
  const svg = toDocs ? new URL('docs/soak.svg', ROOT) : new URL('soak.svg', RESULTS);
  writeFileSync(svg, drawPlot(report));
  if (toDocs) updateDoc(new URL('docs/RELIABILITY.md', ROOT), report);
  process.stdout.write(`\n${summaryText(report)}\n`);
  log(`wrote ${json.pathname.slice(ROOT.pathname.length)}, ${svg.pathname.slice(ROOT.pathname.length)}${toDocs ? ' and the Soak section of docs/RELIABILITY.md' : ` (docs/ is written by runs of ${DOC_MINUTES} minutes or more)`}`);
  exitCode = verdict.zeroErrors && verdict.memoryFlat ? 0 : 2;
} catch (err) {
  process.stderr.write(`soak failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  exitCode = 1;
} finally {
  await Promise.all(origins.map((o) => o.close().catch(() => {})));
  await Promise.all([children.auth?.stop(), children.gateway?.stop(), children.fake?.stop()]);
}
process.exit(exitCode);

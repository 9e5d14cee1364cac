import { availableParallelism } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { hashPassword } from '../../src/auth/passwords.ts';
import { loadBcryptCandidates, timeCandidates } from '../lib/bcrypt-candidates.ts';
import type { ChildServer } from '../lib/children.ts';
import { cpuWindow, waitUntilIdle } from '../lib/cpu.ts';
import { cpuText, fmt, log, mean } from '../lib/format.ts';
import { load, percentile, problems, type Sample } from '../lib/load.ts';
import type { Row } from '../lib/report.ts';
import type { AuthInfo } from '../servers/auth-info.ts';

/** Benchmarks 1 and 2: login throughput against the bcrypt bound, and /v1/me latency while logins saturate the CPU. */

const CORES = availableParallelism();
const BCRYPT_COST = 12;
const HASH_RUNS = 4; // timed before the load, and again after it
const LOGIN_CONNECTIONS = 4 * CORES;
const LOGIN_WARMUP_S = 2;
const LOGIN_WINDOW_S = 15;
const LOGIN_TARGET = 0.9;
const PROBE_S = 10;
const IDLE_PROBE_S = 5;
const PROBE_RATE = 50;
const PROBE_CONNECTIONS = 2;
const PROBE_P99_TARGET_MS = 20;
const PASSWORD = 'bench password 0123456789';

/** Hashes per second with CORES hashes at a time through the service's own hashPassword (prehash, cap, library). */
async function parallelHashRate(rounds: number): Promise<number> {
  const t = performance.now();
  for (let i = 0; i < rounds; i++) {
    await Promise.all(Array.from({ length: CORES }, () => hashPassword(PASSWORD, BCRYPT_COST)));
  }
  return (rounds * CORES) / ((performance.now() - t) / 1000);
}

/**
 * GET /v1/me at a modest fixed rate. Also measures this process's own
 * event-loop delay meanwhile: a late client adds its lateness to what it measures.
 */
async function probeMe(url: string, headers: Record<string, string>, seconds: number) {
  const resolution = 2; // ms; the histogram records whole timer intervals, so lateness = value - resolution
  const delay = monitorEventLoopDelay({ resolution });
  delay.enable();
  const run = await load(
    {
      url: `${url}/v1/me`,
      headers,
      connections: PROBE_CONNECTIONS,
      overallRate: PROBE_RATE,
      duration: seconds,
      // autocannon's correction assumes a request every ceil(1 / rate) = 1 ms; the exact latencies are kept instead.
      ignoreCoordinatedOmission: true,
    },
    true,
  );
  delay.disable();
  const latencies = run.ok.map((s) => s.ms).sort((a, b) => a - b);
  return {
    result: run.result,
    n: latencies.length,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    max: latencies.at(-1) ?? Number.NaN,
    clientDelayP99: delay.percentile(99) / 1e6 - resolution,
    clientDelayMax: delay.max / 1e6 - resolution,
  };
}

const rateIn = (samples: Sample[], from: number, to: number) =>
  samples.filter((s) => s.at >= from && s.at < to).length / ((to - from) / 1000);

/**
 * Benchmarks 1 and 2 share one login load: its rate is counted over a window
 * after the warm-up, then the /v1/me probe runs while it goes on.
 */
export async function loginAndLatency(auth: ChildServer<AuthInfo>, apiKey: string, meHeaders: Record<string, string>) {
  const { url, email, password } = auth.info;
  const { candidates, notFound } = loadBcryptCandidates();
  if (!candidates.some((c) => c.inUse)) throw new Error('the bcrypt package the service uses did not load');
  log(`timing bcrypt cost ${BCRYPT_COST}: ${candidates.map((c) => c.label).join(', ')}`);
  await timeCandidates(candidates, 1, BCRYPT_COST); // warm-up
  const hashesBefore = await timeCandidates(candidates, HASH_RUNS, BCRYPT_COST);
  const parallelRate = await parallelHashRate(2);
  log(`/v1/me on the idle server for ${IDLE_PROBE_S} s, after 1 s of warm-up`);
  await load({ url: `${url}/v1/me`, headers: meHeaders, connections: PROBE_CONNECTIONS, duration: 1 });
  const idle = await probeMe(url, meHeaders, IDLE_PROBE_S);

  log(`login load: ${LOGIN_CONNECTIONS} connections; ${LOGIN_WARMUP_S} s warm-up, ${LOGIN_WINDOW_S} s window, then ${PROBE_S} s of /v1/me`);
  const loginRun = load(
    {
      url: `${url}/v1/login`,
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
      body: JSON.stringify({ email, password, ip: '198.51.100.7' }),
      connections: LOGIN_CONNECTIONS,
      duration: LOGIN_WARMUP_S + LOGIN_WINDOW_S + PROBE_S + 2,
    },
    true,
  );
  await sleep(LOGIN_WARMUP_S * 1000);
  const windowStart = performance.now();
  const windowCpu = cpuWindow(auth.pid);
  await sleep(LOGIN_WINDOW_S * 1000);
  const windowEnd = performance.now();
  const loginCpu = windowCpu();

  const probeCpuWindow = cpuWindow(auth.pid);
  const probe = await probeMe(url, meHeaders, PROBE_S);
  const probeEnd = performance.now();
  const probeCpu = probeCpuWindow();
  const logins = await loginRun;

  await waitUntilIdle(auth.pid); // in-flight logins finish before bcrypt is timed again
  const hashesAfter = await timeCandidates(candidates, HASH_RUNS, BCRYPT_COST);

  // The bound is set by the fastest implementation this bench could load, whichever the service uses.
  const timed = candidates.map((c, i) => ({ ...c, before: hashesBefore[i]!, after: hashesAfter[i]!, mean: mean([...hashesBefore[i]!, ...hashesAfter[i]!]) }));
  const fastest = timed.reduce((a, b) => (b.mean < a.mean ? b : a));
  const inUse = timed.find((c) => c.inUse)!;
  const hashMs = fastest.mean;
  const bound = CORES / (hashMs / 1000);
  const loginRate = rateIn(logins.ok, windowStart, windowEnd);
  const loginRatio = loginRate / bound;
  const loginRateDuringProbe = rateIn(logins.ok, windowEnd, probeEnd);
  const ms = (xs: number[]) => xs.map((x) => fmt(x)).join(', ');

  const rows: Row[] = [
    {
      benchmark: 'POST /v1/login throughput',
      measured: `${fmt(loginRate, 2)} logins/s`,
      baseline: `bound ${fmt(bound, 2)}/s = ${CORES} cores / ${fmt(hashMs)} ms bcrypt-${BCRYPT_COST} (${fastest.label}, the fastest of ${timed.length})`,
      result: `${fmt(loginRatio, 3)} of bound`,
      target: `>= ${LOGIN_TARGET}`,
      pass: loginRatio >= LOGIN_TARGET,
    },
    {
      benchmark: 'GET /v1/me latency under login load',
      measured: `p50 ${fmt(probe.p50, 1)} ms, p99 ${fmt(probe.p99, 1)} ms, max ${fmt(probe.max, 1)} ms (${probe.n} requests)`,
      baseline: `idle server: p99 ${fmt(idle.p99, 1)} ms; ${fmt(loginRateDuringProbe / bound, 2)} of the login bound alongside`,
      result: `p99 ${fmt(probe.p99, 1)} ms`,
      target: `< ${PROBE_P99_TARGET_MS} ms`,
      pass: probe.p99 < PROBE_P99_TARGET_MS,
    },
  ];
  const loginTrouble = problems(logins.result);
  const probeTrouble = problems(probe.result);
  const details = [
    ...timed.map(
      (c) =>
        `${c.label}${c.inUse ? ' (the service\'s)' : ''}, bcrypt cost ${BCRYPT_COST}, one hash at a time: ${ms(c.before)} ms before the load, ${ms(c.after)} ms after; mean ${fmt(c.mean, 1)} ms${c === fastest ? ' (the fastest: it sets the bound)' : `, ${fmt(c.mean / hashMs, 3)} × the fastest`}.`,
    ),
    ...(notFound.length ? [`Not installed, so not timed: ${notFound.join(', ')} (BENCH_BCRYPT_DIRS can name directories holding them).`] : []),
    `The service's ${inUse.label} reaches at most ${fmt(hashMs / inUse.mean, 3)} of the bound by its hash time alone.`,
    `bcrypt alone, ${CORES} hashes at a time (no HTTP, no database): ${fmt(parallelRate, 2)} hashes/s, ${fmt(parallelRate / bound, 2)} of the bound.`,
    `Login window, CPU in cores (${CORES} = all): ${cpuText(loginCpu, 'account service')}.${loginTrouble ? ` Not 2xx: ${loginTrouble}.` : ''}`,
    `/v1/me probe under login load: ${PROBE_RATE} requests/s on ${PROBE_CONNECTIONS} connections for ${PROBE_S} s, ${probe.n} 2xx responses, alongside ${fmt(loginRateDuringProbe, 2)} logins/s; CPU: ${cpuText(probeCpu, 'account service')}. The bench process's own event loop was late by up to ${fmt(probe.clientDelayMax, 1)} ms (p99 ${fmt(probe.clientDelayP99, 1)} ms), lateness that lands in the latencies it measures.${probeTrouble ? ` Not 2xx: ${probeTrouble}.` : ''}`,
    `/v1/me probe on the idle server (before the login load, ${IDLE_PROBE_S} s): p50 ${fmt(idle.p50, 1)} ms, p99 ${fmt(idle.p99, 1)} ms, max ${fmt(idle.max, 1)} ms (${idle.n} requests).${problems(idle.result) ? ` Not 2xx: ${problems(idle.result)}.` : ''}`,
  ];
  const raw = {
    bcrypt: timed.map((c) => ({ label: c.label, inUse: c.inUse, before: c.before, after: c.after, mean: c.mean })),
    bcryptNotFound: notFound,
    parallelRate,
    bound,
    loginRate,
    loginRatio,
    loginRateDuringProbe,
    loginCpu,
    idleProbe: { ...idle, result: undefined },
    probe: { ...probe, result: undefined, cpu: probeCpu },
  };
  return { rows, details, raw };
}


import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { Client, Options } from 'autocannon';
import type { ChildServer } from '../lib/children.ts';
import { processWriteBytes } from '../lib/cpu.ts';
import { call, cpuText, fmt, log } from '../lib/format.ts';
import { percentile } from '../lib/load.ts';
import type { OAuthUser } from '../lib/oauth-flow.ts';
import type { Row } from '../lib/report.ts';
import { type Comparison, cpuPerRequest, type Side, versusBare } from '../lib/slices.ts';
import type { AuthInfo } from '../servers/auth-info.ts';
import type { StallReading } from '../servers/stall-meter.ts';
import { bareSide, THROUGHPUT_CONNECTIONS, THROUGHPUT_SLICE_S, THROUGHPUT_WARMUP_S } from './throughput.ts';

/**
 * Benchmark 4: the OAuth resource and token paths against the bare Fastify
 * route, each in its own bare, route, route, bare slices.
 * - GET /oauth/userinfo with an OAuth access token, 16 connections. Target: 0.40 of bare.
 * - POST /oauth/token, refresh_token grant, 8 connections. The ratio, the
 *   absolute rate, and the rate per core of server CPU next to Keycloak's
 *   sizing figure; writes and CPU per refresh; latency, with the target
 *   p99 within 3 × p50 (no stall behind a checkpoint or a burst of
 *   writes). Every refresh rotates the token, so each
 *   connection runs a chain: it starts from the refresh token of its own
 *   authorization and sends, each time, the refresh token of the previous
 *   response. Every run (warm-up included) starts fresh chains: a run ends
 *   with requests in flight whose successors are lost, and presenting their
 *   predecessor again would be a reuse (the family's revocation).
 */

const USERINFO_TARGET = 0.4;
const REFRESH_CONNECTIONS = 8;
/** Keycloak's CPU sizing guide: 1 vCPU per 120 refresh token requests per second (https://www.keycloak.org/high-availability/single-cluster/concepts-memory-and-cpu-sizing). */
const KEYCLOAK_REFRESHES_PER_VCPU = 120;
const REFRESH_P99_OVER_P50 = 3;

/** What the server wrote during the measured refresh slices: database rows (SQLite's total_changes) and bytes to storage. */
interface Writes {
  rows: number;
  bytes: number;
}

/** Reads the server's write counters before and after each measured slice; sums the differences. */
function writeCounter(auth: ChildServer<AuthInfo>, into: Writes) {
  let rows0 = 0;
  let bytes0 = 0;
  const read = async () => ({ rows: (await auth.ask<{ rows: number }>('db-writes')).rows, bytes: processWriteBytes(auth.pid) });
  return {
    async start() {
      ({ rows: rows0, bytes: bytes0 } = await read());
    },
    async end() {
      const now = await read();
      into.rows += now.rows - rows0;
      into.bytes += now.bytes - bytes0;
    },
  };
}

/** Stalls of one measured slice: the server's (its event loop, its GC) and this process's event loop, which autocannon runs on. */
interface SliceStalls {
  server: StallReading;
  benchLoopP99: number;
  benchLoopMax: number;
}

/**
 * Around each measured slice: opens a window of the server's stall meter
 * (bench/servers/stall-meter.ts) and of this process's own event-loop delay,
 * and keeps both readings. A late load generator adds its lateness to the
 * latencies it measures; a late server, to every request in flight.
 */
function stallRecorder(auth: ChildServer<AuthInfo>, into: SliceStalls[]) {
  const resolution = 2; // ms; as in the stall meter: lateness = value - resolution
  let delay = monitorEventLoopDelay({ resolution });
  return {
    async start() {
      await auth.ask<StallReading>('stalls');
      delay = monitorEventLoopDelay({ resolution });
      delay.enable();
    },
    async end() {
      delay.disable();
      const server = await auth.ask<StallReading>('stalls');
      into.push({ server, benchLoopP99: Math.max(0, delay.percentile(99) / 1e6 - resolution), benchLoopMax: Math.max(0, delay.max / 1e6 - resolution) });
    },
  };
}

/** Both of the above, in one `around`. */
function around(...parts: { start(): Promise<void>; end(): Promise<void> }[]) {
  return {
    async start() {
      for (const part of parts) await part.start();
    },
    async end() {
      for (const part of parts) await part.end();
    },
  };
}

/** One run's refresh chains: 2xx responses with a new refresh token, and 2xx responses without one (a broken chain). */
interface ChainStats {
  rotated: number;
  unrotated: number;
}

/** The refresh grant as a side of versusBare; `runs` gets one ChainStats per run: the warm-up, then the two slices. */
function refreshSide(auth: ChildServer<AuthInfo>, user: OAuthUser, runs: ChainStats[], writes: Writes, stalls: SliceStalls[]): Side {
  const headers = { 'content-type': 'application/x-www-form-urlencoded' };
  const form = (token: string) =>
    new URLSearchParams({ grant_type: 'refresh_token', refresh_token: token, client_id: user.clientId }).toString();
  return {
    server: auth,
    record: true,
    around: around(writeCounter(auth, writes), stallRecorder(auth, stalls)),
    async options(): Promise<Options> {
      const starts: string[] = [];
      for (let i = 0; i < REFRESH_CONNECTIONS; i++) starts.push((await user.authorize()).refresh_token);
      const stats: ChainStats = { rotated: 0, unrotated: 0 };
      runs.push(stats);
      let next = 0;
      return {
        url: `${auth.info.url}/oauth/token`,
        method: 'POST',
        headers,
        // Called once per connection, when autocannon creates it: the connection's own chain.
        setupClient(client: Client) {
          const chain = { token: starts[next++ % starts.length]! };
          client.setRequests([
            {
              method: 'POST',
              path: '/oauth/token',
              headers,
              setupRequest: (request) => ({ ...request, body: form(chain.token) }),
              onResponse(status, body) {
                if (status < 200 || status >= 300) return; // counted by autocannon; the chain is dead from here
                let successor: unknown;
                try {
                  successor = (JSON.parse(body) as { refresh_token?: unknown }).refresh_token;
                } catch {
                  successor = undefined;
                }
                if (typeof successor === 'string' && successor !== chain.token) {
                  chain.token = successor;
                  stats.rotated++;
                } else {
                  stats.unrotated++;
                }
              },
            },
          ]);
        },
      };
    },
  };
}

const stallText = (s: SliceStalls) =>
  `server event loop late by p99 ${fmt(s.server.loopP99, 1)} ms, max ${fmt(s.server.loopMax, 1)} ms, ${s.server.gcCount} GC pauses (${fmt(s.server.gcMs)} ms in all, longest ${fmt(s.server.gcMaxMs, 1)} ms); bench process late by p99 ${fmt(s.benchLoopP99, 1)} ms, max ${fmt(s.benchLoopMax, 1)} ms`;

const notOk = (c: Comparison) => [...c.bare.trouble, ...c.route.trouble];

export async function oauthThroughput(auth: ChildServer<AuthInfo>, bare: ChildServer<{ url: string }>, user: OAuthUser) {
  const { url } = auth.info;
  const tokens = await user.authorize();
  const userinfoHeaders = { authorization: `Bearer ${tokens.access_token}` };
  const check = await call(`${url}/oauth/userinfo`, { headers: userinfoHeaders });
  if (check.status !== 200 || JSON.parse(check.body).email !== auth.info.email) {
    throw new Error(`/oauth/userinfo failed: ${check.status} ${check.body}`);
  }
  const timing = { warmupS: THROUGHPUT_WARMUP_S, sliceS: THROUGHPUT_SLICE_S };

  log(`userinfo: ${THROUGHPUT_CONNECTIONS} connections, ${THROUGHPUT_SLICE_S} s slices: bare, userinfo, userinfo, bare`);
  const userinfoSide: Side = { server: auth, options: () => ({ url: `${url}/oauth/userinfo`, headers: userinfoHeaders }) };
  const ui = await versusBare(bareSide(bare), userinfoSide, { ...timing, connections: THROUGHPUT_CONNECTIONS });

  log(`refresh grant: ${REFRESH_CONNECTIONS} connections (one token chain each), ${THROUGHPUT_SLICE_S} s slices: bare, refresh, refresh, bare`);
  const runs: ChainStats[] = [];
  const writes: Writes = { rows: 0, bytes: 0 };
  const stalls: SliceStalls[] = [];
  const rf = await versusBare(bareSide(bare), refreshSide(auth, user, runs, writes, stalls), { ...timing, connections: REFRESH_CONNECTIONS });
  const sorted = rf.route.latencies.toSorted((a, b) => a - b);
  const p50 = percentile(sorted, 50);
  const p99 = percentile(sorted, 99);
  const rowsPerRefresh = writes.rows / rf.route.ok;
  const kbPerRefresh = writes.bytes / rf.route.ok / 1024;
  const sum = (list: ChainStats[]) => list.reduce((a, b) => ({ rotated: a.rotated + b.rotated, unrotated: a.unrotated + b.unrotated }), { rotated: 0, unrotated: 0 });
  const warmup = runs[0] ?? { rotated: 0, unrotated: 0 };
  const measured = sum(runs.slice(1));
  const perCore = rf.rate / rf.route.cpu.server;
  const keycloakRatio = perCore / KEYCLOAK_REFRESHES_PER_VCPU;
  const uiTrouble = notOk(ui);
  const rfTrouble = notOk(rf);
  const unrotated = warmup.unrotated + measured.unrotated;
  const chainTrouble = unrotated > 0 ? `${unrotated} 2xx refresh responses without a new refresh token` : '';
  const refreshClean = rf.route.trouble.length === 0 && !rf.route.warmupTrouble && unrotated === 0;

  const rows: Row[] = [
    {
      id: '4a',
      benchmark: 'GET /oauth/userinfo throughput (OAuth access token)',
      measured: `${fmt(ui.rate)} req/s`,
      baseline: `bare Fastify ${fmt(ui.bareRate)} req/s`,
      result: `${fmt(ui.ratio, 3)} of bare${ui.route.trouble.length ? ` (not 2xx: ${ui.route.trouble.join('; ')})` : ''}`,
      target: `>= ${USERINFO_TARGET}`,
      pass: ui.ratio >= USERINFO_TARGET,
    },
    {
      id: '4b',
      benchmark: 'POST /oauth/token refresh_token grant throughput',
      measured: `${fmt(rf.rate)} refreshes/s, ${fmt(perCore)} per core of server CPU, ${fmt(cpuPerRequest(rf.route))} µs CPU and ${fmt(rowsPerRefresh, 1)} rows (${fmt(kbPerRefresh, 1)} KiB) written per refresh; latency p50 ${fmt(p50, 2)} ms, p99 ${fmt(p99, 2)} ms`,
      baseline: `bare Fastify ${fmt(rf.bareRate)} req/s; Keycloak ${KEYCLOAK_REFRESHES_PER_VCPU}/s per vCPU`,
      result: `${fmt(rf.ratio, 3)} of bare; ${fmt(keycloakRatio, 1)} × Keycloak per core; p99 = ${fmt(p99 / p50, 2)} × p50`,
      target: `p99 <= ${REFRESH_P99_OVER_P50} × p50`,
      pass: p99 <= REFRESH_P99_OVER_P50 * p50,
      ...(refreshClean ? {} : { verdict: 'INVALID' }),
    },
  ];
  const details = [
    `userinfo, CPU in cores: bare Fastify slices: ${cpuText(ui.bare.cpu, 'bare server')}; /oauth/userinfo slices: ${cpuText(ui.route.cpu, 'account service')}. Server CPU per request: bare Fastify ${fmt(cpuPerRequest(ui.bare))} µs, /oauth/userinfo ${fmt(cpuPerRequest(ui.route))} µs.${uiTrouble.length ? ` Not 2xx: ${uiTrouble.join('; ')}.` : ' Every response 2xx.'}`,
    `Refresh grant, CPU in cores: bare Fastify slices (${REFRESH_CONNECTIONS} connections): ${cpuText(rf.bare.cpu, 'bare server')}; refresh slices: ${cpuText(rf.route.cpu, 'account service')}. Server CPU per refresh ${fmt(cpuPerRequest(rf.route))} µs (bare Fastify ${fmt(cpuPerRequest(rf.bare))} µs per request); ${fmt(rf.rate)} refreshes/s on ${fmt(rf.route.cpu.server, 2)} cores of server CPU = ${fmt(perCore)} per core, ${fmt(keycloakRatio, 1)} × Keycloak's ${KEYCLOAK_REFRESHES_PER_VCPU} per vCPU (their figure: behind TLS, issuing signed JWTs, the database on its own machines and not counted; ours: plain HTTP, opaque tokens, SQLite inside the server process, so its CPU is counted).`,
    `Refresh writes and latency: over the measured refresh slices the server changed ${writes.rows} database rows (SQLite's total_changes() on its one write connection) and sent ${fmt(writes.bytes / 1024 / 1024, 1)} MiB to storage (write_bytes of /proc/<pid>/io: WAL appends and checkpoints), for ${rf.route.ok} refreshes: ${fmt(rowsPerRefresh, 2)} rows and ${fmt(kbPerRefresh, 1)} KiB per refresh. Latency of every 2xx refresh, exact (${sorted.length} responses): p50 ${fmt(p50, 2)} ms, p90 ${fmt(percentile(sorted, 90), 2)} ms, p99 ${fmt(p99, 2)} ms, max ${fmt(sorted.at(-1) ?? Number.NaN, 1)} ms.`,
    `Refresh stalls, per measured slice: ${stalls.map(stallText).join('; ')}. Garbage collections: ${fmt((1000 * stalls.reduce((a, s) => a + s.server.gcCount, 0)) / rf.route.ok, 2)} per 1000 refreshes.`,
    `Refresh chains: ${measured.rotated} rotations in the measured slices (${warmup.rotated} more in the warm-up), each 2xx response's new refresh token sent by its connection's next request; not 2xx (or failed) in the measured refresh slices: ${rf.route.notOk}${rfTrouble.length ? ` (${rfTrouble.join('; ')})` : ''}${rf.route.warmupTrouble ? `; in the warm-up: ${rf.route.warmupTrouble}` : ''}${chainTrouble ? `; ${chainTrouble}` : ''}.`,
  ];
  const raw = {
    userinfo: { bareRate: ui.bareRate, rate: ui.rate, ratio: ui.ratio, totals: { bare: ui.bare, userinfo: ui.route } },
    refresh: {
      bareRate: rf.bareRate,
      rate: rf.rate,
      ratio: rf.ratio,
      perCore,
      keycloakRatio,
      writes: { ...writes, rowsPerRefresh, bytesPerRefresh: writes.bytes / rf.route.ok },
      latencyMs: { p50, p90: percentile(sorted, 90), p99, max: sorted.at(-1) },
      chains: { warmup, measured },
      stalls,
      totals: { bare: { ...rf.bare, latencies: undefined }, refresh: { ...rf.route, latencies: undefined } },
    },
  };
  return { rows, details, raw };
}

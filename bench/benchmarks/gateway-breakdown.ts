import { type ChildServer, startServer } from '../lib/children.ts';
import { processCpuSeconds, waitUntilIdle } from '../lib/cpu.ts';
import { fmt, log } from '../lib/format.ts';
import { NODE_FLOOR, type RunningTarget, startGateway } from '../lib/gateway-targets.ts';
import { load } from '../lib/load.ts';
import type { Row } from '../lib/report.ts';

/**
 * Where the gateway's CPU per call goes: the same gateway process
 * (bench/servers/gateway-server.ts) started in three configurations beside
 * the Node floor, on one fake provider answering at once, 50 connections,
 * every request new (a cache miss). Slices alternate between the targets (in
 * order, then reversed) so that a noisy stretch of the shared machine falls
 * on all of them. No target: it says how much of the gap to the floor is
 * the pipeline's stages and how much is the path every call takes whatever
 * the stages (HTTP, the API key, the provider call, the usage record).
 */
const CONNECTIONS = 50;
const LEAST = 'least gateway';
const LEAST_NO_RECORD = 'least gateway, no usage record';
const WARMUP_S = 2;
const SLICE_S = 5;
const ROUNDS = 4;

const NO_STAGE = JSON.stringify({ compaction: { default: 'off' }, routing: { enabled: false }, cache: { enabled: false }, prompt_cache: { enabled: false } });

const CONFIGURATIONS: { name: string; what: string; env: Record<string, string> }[] = [
  // No BENCH_GATEWAY_SETTINGS: the bench server's own settings, benchmark 5's.
  { name: 'every stage', what: 'every stage on, as in benchmark 5', env: {} },
  { name: 'no stage', what: 'cache, dedup, compaction, routing, limits and prompt caching off', env: { BENCH_GATEWAY_SETTINGS: NO_STAGE } },
  {
    name: 'no stage, no journal',
    what: 'and GATEWAY_USAGE_JOURNAL_DIR=off (records still written, in batches)',
    env: { BENCH_GATEWAY_SETTINGS: NO_STAGE, GATEWAY_USAGE_JOURNAL_DIR: 'off' },
  },
];

interface Tally {
  name: string;
  calls: number;
  seconds: number;
  cpuSeconds: number;
  failed: number;
}

export async function gatewayBreakdown(): Promise<{ rows: Row[]; details: string[]; raw: Record<string, unknown> }> {
  log('gateway breakdown: the floor, the least gateway with and without a usage record, and three configurations of this gateway');
  const children: ChildServer<unknown>[] = [];
  const running: RunningTarget[] = [];
  try {
    const fake = await startServer<{ url: string }>('fake provider', new URL('../servers/fake-provider.ts', import.meta.url), {
      FAKE_BEHAVIOUR: JSON.stringify({ latencyMs: 0 }),
    });
    children.push(fake);
    const upstream = { url: fake.info.url, pid: fake.pid, apiKey: 'sk-bench-fake' };
    const targets: { name: string; target: RunningTarget }[] = [{ name: 'node floor', target: await NODE_FLOOR.start(upstream) }];
    running.push(targets[0]!.target);
    for (const [name, records] of [[LEAST, 'on'], [LEAST_NO_RECORD, 'off']] as const) {
      const least = await startServer<{ url: string; apiKey: string; model: string }>(name, new URL('../servers/least-gateway.ts', import.meta.url), {
        UPSTREAM_URL: upstream.url,
        LEAST_GATEWAY_RECORDS: records,
      });
      children.push(least);
      targets.push({
        name,
        target: {
          url: `${least.info.url}/v1`,
          headers: { 'content-type': 'application/json', authorization: `Bearer ${least.info.apiKey}`, 'x-gateway-session-id': 'bench-session' },
          model: least.info.model,
          pid: least.pid,
          stop: async () => {},
        },
      });
    }
    for (const c of CONFIGURATIONS) {
      const target = await startGateway(upstream, `gateway (${c.name})`, c.env);
      running.push(target);
      targets.push({ name: c.name, target });
    }
    const tallies = new Map<string, Tally>(targets.map(({ name }) => [name, { name, calls: 0, seconds: 0, cpuSeconds: 0, failed: 0 }]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const { name, target } of round % 2 ? [...targets].reverse() : targets) {
        const options = {
          url: `${target.url}/chat/completions`,
          method: 'POST' as const,
          headers: target.headers,
          body: JSON.stringify({ model: target.model ?? 'fake-model', messages: [{ role: 'user', content: 'Say hello, [<id>].' }] }),
          idReplacement: true,
          connections: CONNECTIONS,
        };
        await waitUntilIdle(target.pid);
        await load({ ...options, duration: WARMUP_S });
        const cpu0 = processCpuSeconds(target.pid);
        const { result } = await load({ ...options, duration: SLICE_S });
        const tally = tallies.get(name)!;
        tally.cpuSeconds += processCpuSeconds(target.pid) - cpu0;
        tally.calls += result['2xx'];
        tally.failed += result.non2xx + result.errors + result.timeouts;
        tally.seconds += SLICE_S;
      }
    }
    const floor = tallies.get('node floor')!;
    const rate = (t: Tally) => t.calls / t.seconds;
    const perCall = (t: Tally) => (t.cpuSeconds / t.calls) * 1e6;
    const rows: Row[] = [
      { name: LEAST_NO_RECORD, label: 'the least a gateway does, without a usage record (bench/servers/least-gateway.ts)' },
      { name: LEAST, label: 'the least a gateway keeping usage records does (bench/servers/least-gateway.ts)' },
      ...CONFIGURATIONS.map((c) => ({ name: c.name, label: `gateway CPU per call by configuration: ${c.name}` }))].map(({ name, label }) => {
      const t = tallies.get(name)!;
      return {
        id: '5b',
        benchmark: label,
        measured: `${fmt(rate(t))} req/s, ${fmt(perCall(t))} µs CPU per call${t.failed ? `; ${t.failed} not 2xx` : ''}`,
        baseline: `floor ${fmt(rate(floor))} req/s, ${fmt(perCall(floor))} µs`,
        result: `${fmt(rate(t) / rate(floor), 3)} of the floor; ${fmt(perCall(t) / perCall(floor), 2)} × its CPU`,
        target: 'none (compared)',
        pass: t.failed === 0,
        verdict: t.failed ? 'FAILED' : 'info',
      };
    });
    const details = [
      `Gateway breakdown (bench/benchmarks/gateway-breakdown.ts): the gateway of benchmark 5 in three configurations (${CONFIGURATIONS.map((c) => `${c.name}: ${c.what}`).join('; ')}) beside the Node floor, ${CONNECTIONS} connections, a fake answering at once, every request new; ${ROUNDS} slices of ${SLICE_S} s each (after ${WARMUP_S} s of warm-up), in order then reversed. CPU: the process's, all its threads.`,
      `The least gateway (bench/servers/least-gateway.ts): the floor plus only what a gateway that keeps a usage record of every call cannot skip: the body parsed, the key hashed and looked up in memory, the request re-serialized upstream, the answer parsed (its usage, to price it) and sent with ten X-Gateway-* headers, and one row in the gateway's own usage_records table (same columns and indexes; 64-row prepared inserts, 512 rows per transaction, on its one thread). No framework, no stage, no journal, no rollups: what it leaves of the floor's throughput bounds what any gateway with every stage on can keep here. Beside it, the same without the usage record (LEAST_GATEWAY_RECORDS=off).`,
    ];
    return { rows, details, raw: { gatewayBreakdown: [...tallies.values()] } };
  } finally {
    for (const t of running) await t.stop();
    for (const c of children.reverse()) await c.stop();
  }
}

import type { ChildServer } from '../lib/children.ts';
import { cpuText, fmt, log } from '../lib/format.ts';
import type { Row } from '../lib/report.ts';
import { cpuPerRequest, type Side, versusBare } from '../lib/slices.ts';
import type { AuthInfo } from '../servers/auth-info.ts';

/** Benchmark 3: GET /v1/me throughput against the bare Fastify route. */

export const THROUGHPUT_CONNECTIONS = 16;
export const THROUGHPUT_WARMUP_S = 2;
export const THROUGHPUT_SLICE_S = 5;
const THROUGHPUT_TARGET = 0.4;

/** The bare Fastify route, checked by body. */
export const bareSide = (bare: ChildServer<{ url: string }>): Side => ({
  server: bare,
  options: () => ({ url: `${bare.info.url}/`, expectBody: '{"ok":true}' }),
});

export async function meThroughput(auth: ChildServer<AuthInfo>, bare: ChildServer<{ url: string }>, meHeaders: Record<string, string>) {
  log(`throughput: ${THROUGHPUT_CONNECTIONS} connections, ${THROUGHPUT_SLICE_S} s slices: bare, me, me, bare`);
  const me: Side = { server: auth, options: () => ({ url: `${auth.info.url}/v1/me`, headers: meHeaders }) };
  const c = await versusBare(bareSide(bare), me, {
    connections: THROUGHPUT_CONNECTIONS,
    warmupS: THROUGHPUT_WARMUP_S,
    sliceS: THROUGHPUT_SLICE_S,
  });
  const trouble = [...c.bare.trouble, ...c.route.trouble];

  const row: Row = {
    benchmark: 'GET /v1/me throughput',
    measured: `${fmt(c.rate)} req/s`,
    baseline: `bare Fastify ${fmt(c.bareRate)} req/s`,
    result: `${fmt(c.ratio, 3)} of bare`,
    target: `>= ${THROUGHPUT_TARGET}`,
    pass: c.ratio >= THROUGHPUT_TARGET,
  };
  const details = [
    `Throughput, CPU in cores: bare Fastify slices: ${cpuText(c.bare.cpu, 'bare server')}; /v1/me slices: ${cpuText(c.route.cpu, 'account service')}. A server under 1 core is waiting on the load generator or on other processes.`,
    `Server CPU per request: bare Fastify ${fmt(cpuPerRequest(c.bare))} µs, /v1/me ${fmt(cpuPerRequest(c.route))} µs.${trouble.length ? ` Not 2xx: ${trouble.join('; ')}.` : ''}`,
  ];
  const totals = { bare: c.bare, me: c.route };
  return { row, details, raw: { bareRate: c.bareRate, meRate: c.rate, meRatio: c.ratio, totals } };
}

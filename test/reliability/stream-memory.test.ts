import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, type TestContext, test } from 'node:test';
import type { Flood } from '../../tools/fake-provider/behaviour.ts';
import { createFakeProvider, type FakeProvider } from '../../tools/fake-provider/server.ts';
import { freePort } from '../helpers/auth.ts';
import { type ServiceProcess, startServiceProcess } from '../helpers/service-process.ts';
import { INSPECTOR_ENV, memoryAfterGc } from './process-memory.ts';

/**
 * Issue 31, defect 5: memory is bounded per call. The gateway runs as its
 * own process (`npm run start:gateway`, SQLite, the response cache on as by
 * default, so every stream goes through a dedup flight) in front of the
 * fake provider, which streams hundreds of MB. Two measures: the process's
 * live memory (heap data and external memory after a full GC forced
 * through the inspector, process-memory.ts), read while a stream is held
 * open, which is exact; and its resident memory from /proc, sampled while a
 * stream goes through, which also counts garbage not yet collected and so
 * gets a coarse bound. Before the fix, a flight kept every chunk (a 400 MB
 * stream grew the process by over 400 MB, held while the stream idled), the
 * leader's socket took the whole answer when its client read slowly, and
 * the SSE parser's pending line grew with a line that never ended.
 */

const MiB = 2 ** 20;
const STREAM_BYTES = 400 * MiB;
/**
 * Live data a held-open stream may add: the flight's chunks up to the
 * cache's entry limit (1 MiB), the stream buffers (the relay's 1 MiB, the
 * sockets'), the parser's line. Measured: under 3 MiB with the fix; the
 * defects hold the whole stream (400 MiB).
 */
const LIVE_GROWTH_BOUND = 32 * MiB;
/**
 * Resident memory while 400 MB go through: V8 lets garbage pile up between
 * collections and keeps the pages it grew into. Measured with the fix: 0 to
 * 113 MiB (the most on the process's first large stream, as its old
 * generation grows to its working size); the defects grew it by the
 * stream's size.
 */
const RSS_GROWTH_BOUND = 256 * MiB;
/**
 * What an upstream can send past a client that reads nothing: the sockets'
 * buffers (the kernel's, both connections, a few MiB each way on loopback)
 * and the gateway's own (the relay's 1 MiB, undici's). Measured with the
 * fix: 10 to 13 MiB; without it, the whole flood (200 MiB).
 */
const PAUSED_IN_FLIGHT_BOUND = 48 * MiB;
const MODEL = 'openai/gpt-4o-mini';

interface Gateway {
  service: ServiceProcess;
  url: string;
  fake: FakeProvider;
  apiKey: string;
}

/** The process's resident memory, from /proc. */
function residentBytes(pid: number): number {
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  if (kb === undefined) throw new Error(`/proc/${pid}/status has no VmRSS`);
  return Number(kb) * 1024;
}

/** Samples `pid`'s resident memory every 20 ms while `work` runs; resolves with its result and the highest sample. */
async function peakDuring<T>(pid: number, work: Promise<T>): Promise<{ result: T; peak: number }> {
  let peak = residentBytes(pid);
  const timer = setInterval(() => {
    peak = Math.max(peak, residentBytes(pid));
  }, 20);
  try {
    const result = await work;
    return { result, peak: Math.max(peak, residentBytes(pid)) };
  } finally {
    clearInterval(timer);
  }
}

interface Client {
  /** Resolves with the status and everything but the body once `bytes` have been read (or the stream ended first). */
  read(bytes: number): Promise<{ status: number; bytes: number; tail: string }>;
  /** Resolves once the stream ends (the tail: its last 300 characters). */
  ended: Promise<{ status: number; bytes: number; tail: string }>;
  pause(): void;
  resume(): void;
  close(): void;
}

/** A streamed chat completion over node:http, read as it comes (counted and dropped), which the test may pause. */
function open(gw: Gateway, content: string): Client {
  const req = request(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${gw.apiKey}`, 'content-type': 'application/json' },
  });
  let status = 0;
  let bytes = 0;
  let tail = '';
  let waiting: { bytes: number; resolve: () => void } | undefined;
  let response: import('node:http').IncomingMessage | undefined;
  const state = () => ({ status, bytes, tail });
  const ended = new Promise<{ status: number; bytes: number; tail: string }>((resolve, reject) => {
    req.on('response', (res) => {
      response = res;
      status = res.statusCode ?? 0;
      res.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        tail = (tail + chunk.toString('latin1')).slice(-300);
        if (waiting && bytes >= waiting.bytes) waiting.resolve();
      });
      res.on('end', () => {
        waiting?.resolve();
        resolve(state());
      });
      // The test closing the connection, or the gateway cutting it: the stream ends there.
      res.on('error', () => resolve(state()));
    });
    req.on('error', (err) => (response ? resolve(state()) : reject(err)));
  });
  req.end(JSON.stringify({ model: MODEL, stream: true, messages: [{ role: 'user', content }] }));
  return {
    ended,
    read: (want) =>
      new Promise((resolve) => {
        if (bytes >= want) resolve(state());
        else waiting = { bytes: want, resolve: () => resolve(state()) };
      }),
    pause: () => response?.pause(),
    resume: () => response?.resume(),
    close: () => req.destroy(),
  };
}

const mib = (bytes: number) => `${bytes >= 0 ? '+' : ''}${(bytes / MiB).toFixed(1)} MiB`;

describe('memory is bounded per call: hundreds of MB streamed through the gateway process', { skip: process.platform !== 'linux' && 'reads /proc' }, () => {
  let gw: Gateway;
  let pid: number;
  const live = async () => (await memoryAfterGc(gw.service, gw.url, 'gateway')).live;
  const cleanup: (() => unknown)[] = [];
  after(async () => {
    for (const step of cleanup.reverse()) await step();
  });

  before(async () => {
    const fake = await createFakeProvider({ record: 0 });
    const dataDir = mkdtempSync(join(tmpdir(), 'stream-memory-'));
    cleanup.push(() => rmSync(dataDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 }), () => fake.close());
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    // The suite's one process: stopped (killed if need be) when the suite ends.
    const suite = { after: (step: () => unknown) => cleanup.push(step) } as unknown as TestContext;
    const service = await startServiceProcess(suite, 'src/gateway/main.ts', {
      ...INSPECTOR_ENV,
      DATA_DIR: dataDir,
      GATEWAY_PORT: String(port),
      GATEWAY_ALLOW_PRIVATE_UPSTREAMS: '127.0.0.1',
      GATEWAY_RETRIES: '0',
      GATEWAY_DEFAULT_FALLBACKS: '0',
    });
    cleanup.push(() => service.stop());
    const post = async (path: string, body: unknown, token?: string) => {
      const res = await fetch(`${url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: JSON.stringify(body),
      });
      const answer = (await res.json()) as Record<string, string>;
      assert.equal(res.status, 201, `${path}: ${JSON.stringify(answer)}`);
      return answer;
    };
    const signup = await post('/api/v1/signup', { name: 'Memory', email: 'memory@example.com' });
    await post('/api/v1/tenant/provider-keys', { provider: 'openai', key: 'openai-secret-key-XYZW', base_url: `${fake.url}/v1` }, signup['session_token']);
    gw = { service, url, fake, apiKey: signup['api_key']! };
    pid = service.child.pid!;
    // Warm up: code compiled, pools and buffers made.
    fake.setBehaviour({ flood: { bytes: 40 * MiB } }, { requests: 1 });
    const warmed = await open(gw, 'warm up').ended;
    assert.equal(warmed.status, 200);
    assert.ok(warmed.tail.endsWith('data: [DONE]\n\n'), warmed.tail);
  });

  test('a 400 MB stream relayed with the cache on (a flight records it), to its [DONE]: resident memory stays flat', { timeout: 120_000 }, async (t) => {
    const flood: Flood = { bytes: STREAM_BYTES };
    gw.fake.setBehaviour({ flood }, { requests: 1 });
    const before = residentBytes(pid);
    const { result, peak } = await peakDuring(pid, open(gw, 'a flood').ended);
    t.diagnostic(`resident ${mib(peak - before)} from ${mib(before)}`);
    assert.equal(result.status, 200);
    assert.ok(result.bytes > STREAM_BYTES, `the whole stream went through (${mib(result.bytes)})`);
    assert.ok(result.tail.endsWith('data: [DONE]\n\n'), 'and ended cleanly');
    assert.ok(peak - before < RSS_GROWTH_BOUND, `the gateway grew by ${mib(peak - before)} while ${mib(STREAM_BYTES)} went through`);
  });

  test('a 400 MB stream without [DONE] that then idles: nothing of it is held while it idles', { timeout: 120_000 }, async (t) => {
    const baseline = await live();
    gw.fake.setBehaviour({ flood: { bytes: STREAM_BYTES, end: 'idle' } }, { requests: 1 });
    const before = residentBytes(pid);
    const client = open(gw, 'a flood that idles');
    const { result, peak } = await peakDuring(pid, client.read(STREAM_BYTES));
    assert.equal(result.status, 200);
    assert.ok(result.bytes >= STREAM_BYTES);
    const idle = await live();
    client.close();
    t.diagnostic(`live ${mib(idle - baseline)}, resident ${mib(peak - before)} from ${mib(before)}`);
    assert.ok(idle - baseline < LIVE_GROWTH_BOUND, `the gateway holds ${mib(idle - baseline)} more while the stream idles`);
    assert.ok(peak - before < RSS_GROWTH_BOUND, `the gateway grew by ${mib(peak - before)} while ${mib(STREAM_BYTES)} went through`);
  });

  test('a client that stops reading: the upstream is read at its pace, not buffered for it', { timeout: 120_000 }, async (t) => {
    const baseline = await live();
    gw.fake.reset();
    gw.fake.setBehaviour({ flood: { bytes: 200 * MiB } }, { requests: 1 });
    const client = open(gw, 'a slow reader');
    const { bytes: read } = await client.read(1);
    client.pause();
    // Until the flood stops advancing (the gateway stopped reading it) for a second, or 8 s.
    let sent = gw.fake.calls.floodBytes;
    for (let still = 0, waited = 0; still < 1000 && waited < 8000; waited += 100) {
      await new Promise((r) => setTimeout(r, 100));
      still = gw.fake.calls.floodBytes === sent ? still + 100 : 0;
      sent = gw.fake.calls.floodBytes;
    }
    const paused = await live();
    client.resume();
    const result = await client.ended;
    t.diagnostic(`sent past the client ${mib(sent - read)}, live ${mib(paused - baseline)} while paused`);
    assert.equal(result.status, 200);
    assert.ok(result.tail.endsWith('data: [DONE]\n\n'), 'the whole stream, once it read again');
    assert.ok(sent - read < PAUSED_IN_FLIGHT_BOUND, `the upstream sent ${mib(sent - read)} past a client that read nothing`);
    assert.ok(paused - baseline < LIVE_GROWTH_BOUND, `the gateway held ${mib(paused - baseline)} more for a client that did not read`);
  });

  test('an upstream line or event that never ends: the stream fails with upstream_event_too_large, the gateway does not grow', { timeout: 120_000 }, async (t) => {
    for (const shape of ['line', 'event'] as const) {
      gw.fake.setBehaviour({ flood: { bytes: STREAM_BYTES, shape, pieceBytes: 65536, end: 'cut' } }, { requests: 1 });
      const before = residentBytes(pid);
      const { result, peak } = await peakDuring(pid, open(gw, `an endless ${shape}`).ended);
      t.diagnostic(`${shape}: resident ${mib(peak - before)} from ${mib(before)}`);
      assert.ok(result.tail.includes('"code":"upstream_event_too_large"'), `${shape}: ${result.status} ${result.tail}`);
      assert.ok(peak - before < RSS_GROWTH_BOUND, `${shape}: the gateway grew by ${mib(peak - before)}`);
    }
  });
});

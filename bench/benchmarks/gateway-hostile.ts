import { readFileSync } from 'node:fs';
import type { StallReading } from '../servers/stall-meter.ts';
import { createFakeProvider } from '../../tools/fake-provider/server.ts';
import { chatBody, HOSTILE_MODES, HOSTILE_UNITS, type HostileTenant, hostileText, manyKeysBody, nestedBody } from '../../tools/hostile-inputs.ts';
import { type ChildServer, startServer } from '../lib/children.ts';
import { fmt, log } from '../lib/format.ts';
import type { Row } from '../lib/report.ts';

/**
 * Hostile request content (bench/run.ts part `hostile`; issue 31): each
 * input of tools/hostile-inputs.ts, sent once in every mode of
 * HOSTILE_MODES (every stage: compaction off, safe, aggressive, under a
 * budget; auto routing and a named model's fallbacks; the cache on and
 * bypassed; streamed and not; prompt caching; limits; no provider key),
 * through the gateway in a process of its own (hostile-gateway-server.ts,
 * a 4 MiB body limit) in front of the fake provider (in this process).
 * Each text is about TEXT_BYTES of JSON, three times in a body (3 MB). The
 * gateway's stall meter reads, per input, the longest its event loop was
 * held (and the longest GC pause), against a goal of GOAL_MS; the same for
 * normal prompts: a short question, and as many bytes of the benchmark
 * corpus (prose, code, JSON) as the hostile texts have.
 */
const GOAL_MS = 100;
const TEXT_BYTES = 1_000_000;
const BODY_LIMIT = 4 * 1024 * 1024;

interface Hosts {
  url: string;
  keys: Record<HostileTenant, string>;
}

interface ClassResult {
  name: string;
  stall: StallReading;
  slowestMs: number;
  statuses: number[];
}

/** About `bytes` of the corpus's texts: what a long agent transcript holds. */
function corpusText(bytes: number): string {
  const lines = readFileSync(new URL('../corpus/transcripts.jsonl', import.meta.url), 'utf8').split('\n');
  let text = '';
  for (const line of lines) {
    if (line === '') continue;
    for (const m of (JSON.parse(line) as { messages?: { content?: unknown }[] }).messages ?? []) {
      if (typeof m.content === 'string') text += `${m.content}\n`;
      if (Buffer.byteLength(JSON.stringify(text)) >= bytes) return text;
    }
  }
  return text;
}

async function sendAll(gateway: ChildServer<Hosts>, name: string, requests: { key: string; body: string; headers: Record<string, string> }[]): Promise<ClassResult> {
  await gateway.ask<StallReading>('stalls');
  let slowestMs = 0;
  const statuses: number[] = [];
  for (const r of requests) {
    const started = performance.now();
    const res = await fetch(`${gateway.info.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${r.key}`, ...r.headers },
      body: r.body,
      signal: AbortSignal.timeout(120_000),
    });
    await res.text();
    slowestMs = Math.max(slowestMs, performance.now() - started);
    statuses.push(res.status);
  }
  const stall = await gateway.ask<StallReading>('stalls');
  log(`hostile: ${name}: stall ${fmt(stall.loopMax)} ms, slowest request ${fmt(slowestMs)} ms`);
  return { name, stall, slowestMs, statuses };
}

export async function hostileBenchmark(): Promise<{ rows: Row[]; details: string[]; raw: Record<string, unknown> }> {
  log('hostile: hostile request content through every stage, the gateway\'s stalls');
  const fake = await createFakeProvider({ behaviour: { text: 'Fine.' }, record: 0 });
  const gateway = await startServer<Hosts>('gateway', new URL('../servers/hostile-gateway-server.ts', import.meta.url), {
    UPSTREAM_URL: fake.url,
    GATEWAY_BODY_LIMIT_BYTES: String(BODY_LIMIT),
    GATEWAY_RETRIES: '0',
  });
  try {
    const { keys } = gateway.info;
    const inEveryMode = (text: string) => HOSTILE_MODES.map((m) => ({ key: keys[m.tenant], body: chatBody(text, m.model, m.stream), headers: m.headers }));
    // Warm-up: the code paths compiled before anything is measured.
    await sendAll(gateway, 'warm-up', inEveryMode('Say hello.'));
    const results: ClassResult[] = [];
    results.push(await sendAll(gateway, 'a normal question', inEveryMode('What is the capital of France? Answer in one word.')));
    results.push(await sendAll(gateway, `a normal transcript (${fmt(TEXT_BYTES / 1e6, 1)} MB of the corpus a copy)`, inEveryMode(corpusText(TEXT_BYTES))));
    for (const [name, unit] of HOSTILE_UNITS) results.push(await sendAll(gateway, name, inEveryMode(hostileText(unit, TEXT_BYTES))));
    results.push(await sendAll(gateway, '5,000 levels of nesting', [{ key: keys.full, body: nestedBody(5000), headers: {} }]));
    results.push(await sendAll(gateway, 'an object of 50,000 keys', [{ key: keys.full, body: manyKeysBody(50_000), headers: {} }]));
    const rows: Row[] = results.map((r, i) => ({
      id: `10.${i + 1}`,
      benchmark: `hostile input: ${r.name}, ${r.statuses.length} request${r.statuses.length > 1 ? 's' : ''} (${[...new Set(r.statuses)].join(', ')})`,
      measured: `stall ${fmt(r.stall.loopMax)} ms (GC ${fmt(r.stall.gcMaxMs)} ms)`,
      baseline: `slowest request ${fmt(r.slowestMs)} ms`,
      result: `${fmt(r.stall.loopMax)} ms`,
      target: `≤ ${GOAL_MS} ms stall`,
      pass: r.stall.loopMax <= GOAL_MS && r.statuses.every((s) => s < 500),
    }));
    const worst = results.reduce((a, b) => (b.stall.loopMax > a.stall.loopMax ? b : a));
    return {
      rows,
      details: [
        `hostile input: each text about ${fmt(TEXT_BYTES / 1e6, 1)} MB of JSON, three times in a body, sent in ${HOSTILE_MODES.length} modes; the worst stall was ${fmt(worst.stall.loopMax)} ms (${worst.name}); no 5xx: ${results.every((r) => r.statuses.every((s) => s < 500)) ? 'yes' : 'NO'}`,
      ],
      raw: {
        hostile: Object.fromEntries(results.map((r) => [r.name, { stallMs: r.stall.loopMax, gcMaxMs: r.stall.gcMaxMs, slowestMs: r.slowestMs, statuses: r.statuses }])),
      },
    };
  } finally {
    await gateway.stop();
    await fake.close();
  }
}

import { readFileSync } from 'node:fs';
import { compactionProblems } from '../../src/gateway/compaction/invariants.ts';
import type { Message } from '../../src/gateway/compaction/messages.ts';
import { type CompactMode, formatCompactMode } from '../../src/gateway/compaction/mode.ts';
import { type CompactOptions, compactMessages, DEFAULT_COMPACT_OPTIONS } from '../../src/gateway/compaction/planner.ts';
import { rewriteMessages } from '../../src/gateway/compaction/rewrite.ts';
import { PromptTokenCounter } from '../../src/gateway/compaction/token-counts.ts';
import { countPromptTokens } from '../../src/gateway/tokens.ts';
import { fmt, log } from '../lib/format.ts';
import { percentile } from '../lib/load.ts';
import type { Row } from '../lib/report.ts';

/**
 * Prompt compaction on the transcript corpus (bench/corpus), in process:
 * every session replayed turn by turn (turn k: the messages before the k-th
 * assistant message), each request compacted as the gateway's stage does,
 * in order, with one token counter per mode (so, as in the gateway, a
 * conversation's history is counted once and remembered). For each
 * strategy alone and each mode: the share of prompt tokens saved
 * (countPromptTokens before and after), the compaction time per request
 * (p50/p99 µs) against the in-run baseline of JSON.parse of the same
 * request body (what every request costs anyway), how often a turn's
 * compacted prompt is a prefix of the next turn's (what keeps providers'
 * prompt caches hitting), a cache-aware client's bill modelled on
 * Anthropic's prices against compaction off, and the heap it leaves. Every compacted request is
 * checked with the invariants checker: one broken invariant stops the bench.
 */

interface Session {
  id: string;
  tools?: unknown[];
  messages: Message[];
}

type Variant = { name: string; mode: CompactMode; only?: 'whitespace' | 'repeats' | 'tool-output'; options?: CompactOptions };

/** Stale clearing at a trigger the corpus's shorter sessions reach (its prompts: p50 5.7k, p90 22.8k, max 67.6k tokens). */
const SMALL_TRIGGER: CompactOptions = { ...DEFAULT_COMPACT_OPTIONS, stale: { triggerTokens: 12_000, keepResults: 4, batchTokens: 6_000 } };

const VARIANTS: Variant[] = [
  { name: 'whitespace alone', mode: { kind: 'safe' }, only: 'whitespace' },
  { name: 'repeats alone', mode: { kind: 'safe' }, only: 'repeats' },
  { name: 'tool-output alone', mode: { kind: 'aggressive' }, only: 'tool-output' },
  { name: 'off', mode: { kind: 'off' } },
  { name: 'safe', mode: { kind: 'safe' } },
  { name: 'agent', mode: { kind: 'agent' } },
  { name: 'agent, trigger 12000', mode: { kind: 'agent' }, options: SMALL_TRIGGER },
  { name: 'aggressive', mode: { kind: 'aggressive' } },
  { name: 'budget 32000', mode: { kind: 'budget', tokens: 32_000 } },
  { name: 'budget 8000', mode: { kind: 'budget', tokens: 8_000 } },
];

function loadCorpus(): Session[] {
  const text = readFileSync(new URL('../corpus/transcripts.jsonl', import.meta.url), 'utf8');
  return text
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Session);
}

/** The requests of a session: the messages before each assistant message. */
function requests(session: Session): Message[][] {
  const out: Message[][] = [];
  for (const [i, m] of session.messages.entries()) if (m.role === 'assistant') out.push(session.messages.slice(0, i));
  return out;
}

interface Measured {
  variant: Variant;
  before: number;
  after: number;
  micros: number[];
  parseMicros: number[];
  prefixKept: number;
  pairs: number;
  unmet: number;
  requests: number;
  /** A cache-aware client's bill in input-token units on Anthropic's prices: the prefix shared with the previous turn's request at 0.1, the rest at 1.25. */
  cacheBill: number;
}

/** Tokens of the messages the request shares with the previous one, from the start (the provider's cached prefix), and the rest. */
function cachedSplit(previous: string[] | undefined, sent: string[], sizes: number[], fixed: number): { read: number; written: number } {
  let shared = 0;
  if (previous) while (shared < previous.length && shared < sent.length && previous[shared] === sent[shared]) shared++;
  let read = previous ? fixed : 0;
  let written = previous ? 0 : fixed;
  for (let k = 0; k < sent.length; k++) {
    if (k < shared) read += sizes[k]!;
    else written += sizes[k]!;
  }
  return { read, written };
}

function compactOne(v: Variant, messages: Message[], tools: unknown, counter: PromptTokenCounter) {
  if (v.mode.kind === 'off') return { messages, origin: messages.map((_, i) => i), unmet: undefined, promptTokens: undefined };
  if (v.only === undefined) return compactMessages(messages, tools, v.mode, counter, v.options);
  const r = rewriteMessages(messages, { cutToolOutputs: v.only === 'tool-output', whitespace: v.only === 'whitespace', repeats: v.only === 'repeats' });
  return { messages: r.messages, origin: r.origin, unmet: undefined, promptTokens: undefined };
}

function measure(v: Variant, corpus: Session[]): Measured {
  const m: Measured = { variant: v, before: 0, after: 0, micros: [], parseMicros: [], prefixKept: 0, pairs: 0, unmet: 0, requests: 0, cacheBill: 0 };
  const counter = new PromptTokenCounter();
  for (const session of corpus) {
    let previous: string[] | undefined;
    for (const messages of requests(session)) {
      const body = JSON.stringify({ model: 'x', messages, tools: session.tools });
      let t = performance.now();
      const parsed = JSON.parse(body) as { messages: Message[]; tools: unknown };
      m.parseMicros.push((performance.now() - t) * 1000);
      t = performance.now();
      const out = compactOne(v, parsed.messages, parsed.tools, counter);
      m.micros.push((performance.now() - t) * 1000);
      m.requests++;
      const sentTokens = countPromptTokens(out.messages, parsed.tools);
      const problems = compactionProblems({
        mode: v.mode,
        before: { messages: parsed.messages, tools: parsed.tools },
        after: { messages: out.messages, tools: parsed.tools },
        origin: out.origin,
        promptTokens: sentTokens,
        unreachable: out.unmet !== undefined,
      });
      if (problems.length) throw new Error(`compaction ${v.name} broke an invariant on ${session.id} (${messages.length} messages): ${problems.join('; ')}`);
      if (out.unmet !== undefined) m.unmet++;
      m.before += countPromptTokens(parsed.messages, parsed.tools);
      m.after += out.unmet !== undefined ? countPromptTokens(parsed.messages, parsed.tools) : sentTokens;
      const sent = out.messages.map((x) => JSON.stringify(x));
      const split = cachedSplit(
        previous,
        sent,
        out.messages.map((x) => counter.message(x)),
        countPromptTokens([], parsed.tools),
      );
      m.cacheBill += 0.1 * split.read + 1.25 * split.written;
      if (previous) {
        m.pairs++;
        if (previous.every((x, i) => sent[i] === x)) m.prefixKept++;
      }
      previous = sent;
    }
  }
  return m;
}

export async function compactionBenchmark(): Promise<{ rows: Row[]; details: string[]; raw: Record<string, unknown> }> {
  const corpus = loadCorpus();
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const heapBefore = process.memoryUsage().heapUsed;
  const results: Measured[] = [];
  for (const v of VARIANTS) {
    log(`compaction: ${v.name}`);
    const m = measure(v, corpus);
    m.micros.sort((a, b) => a - b);
    m.parseMicros.sort((a, b) => a - b);
    results.push(m);
  }
  gc?.();
  const heapAfter = process.memoryUsage().heapUsed;
  const offBill = results.find((m) => m.variant.mode.kind === 'off')?.cacheBill ?? 0;
  const rows: Row[] = results.map((m, i) => {
    const saved = (100 * (m.before - m.after)) / m.before;
    const p50 = percentile(m.micros, 50);
    const p99 = percentile(m.micros, 99);
    const parse50 = percentile(m.parseMicros, 50);
    return {
      id: `c${i + 1}`,
      benchmark: `compaction ${m.variant.name}: tokens saved, time per request`,
      measured: `${fmt(saved, 1)}% saved; p50 ${fmt(p50)} µs, p99 ${fmt(p99)} µs`,
      baseline: `JSON.parse p50 ${fmt(parse50)} µs`,
      result: `${fmt(p50 / parse50, 1)}x parse; prefix kept ${m.pairs ? fmt((100 * m.prefixKept) / m.pairs) : '-'}%; cache-aware bill ${fmt(m.cacheBill / offBill, 3)}x off${m.unmet ? `; ${m.unmet} unmet` : ''}`,
      target: 'invariants hold on every request',
      pass: true,
    };
  });
  const requestsPerVariant = results[0]?.requests ?? 0;
  const details = [
    `Compaction corpus: ${corpus.length} sessions, ${requestsPerVariant} requests per variant (each turn of each session, replayed in order), ${fmt(results[0] ? results[0].before / requestsPerVariant : 0)} prompt tokens per request on average; every compacted request passed the invariants checker.`,
    `Compaction "prefix kept": the share of consecutive turns where the previous turn's compacted messages are a prefix of the next turn's (providers' prompt caches hit). Budgets drop whole blocks of old turns, so the prefix breaks once per block.`,
    `Compaction "cache-aware bill": a client that lets the provider cache its history, on Anthropic's prices (input tokens of each request: the messages shared from the start with the previous request of the session at 0.1x, the rest at 1.25x), summed over the corpus, against the same with compaction off. A model of the cache, not a provider's bill (docs/gateway-compaction.md).`,
    `Compaction heap: ${fmt((heapAfter - heapBefore) / 2 ** 20, 1)} MiB more live heap after all variants (${gc ? 'after a full GC' : 'no --expose-gc: includes garbage'}); the token counter keeps at most 50,000 counts per gateway process.`,
  ];
  const raw = {
    compaction: Object.fromEntries(
      results.map((m) => [
        m.variant.name,
        {
          mode: formatCompactMode(m.variant.mode),
          savedPercent: (100 * (m.before - m.after)) / m.before,
          p50Micros: percentile(m.micros, 50),
          p99Micros: percentile(m.micros, 99),
          parseP50Micros: percentile(m.parseMicros, 50),
          prefixKeptPercent: m.pairs ? (100 * m.prefixKept) / m.pairs : null,
          unmet: m.unmet,
          requests: m.requests,
          cacheAwareBillVsOff: m.cacheBill / offBill,
        },
      ]),
    ),
  };
  return { rows, details, raw };
}

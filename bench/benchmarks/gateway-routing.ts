import { readFileSync } from 'node:fs';
import { costUsd } from '../../src/gateway/catalog/cost.ts';
import type { ChatRequest } from '../../src/gateway/providers/types.ts';
import { chooseRoute } from '../../src/gateway/routing/choose-route.ts';
import { classify } from '../../src/gateway/routing/classifier.ts';
import { RoutingPolicy, type RouteModel } from '../../src/gateway/routing/policy.ts';
import { PromptFit } from '../../src/gateway/routing/prompt-fit.ts';
import { promptShape } from '../../src/gateway/routing/prompt-shape.ts';
import { countPromptTokens } from '../../src/gateway/tokens.ts';
import { fmt, log, pct } from '../lib/format.ts';
import type { Row } from '../lib/report.ts';

/**
 * Routing on bench/data/routing-labelled.jsonl, in process (no provider is
 * called: the figures are the router's own):
 * - savings: each prompt priced from the catalog at its exact o200k prompt
 *   tokens and the output tokens its line assumes, on the routed model and on
 *   the baseline, for two tenants with OpenAI and Anthropic keys: one sending
 *   `auto` (baseline: the cheapest top-tier model, as docs/gateway-routing.md
 *   defines it), one routing explicit calls to openai/gpt-5;
 * - speed: the classifier, and the whole routing decision (classifier,
 *   policy, context fit), per request in microseconds, against JSON.parse of
 *   the same request body measured in the same run (a cost every request pays
 *   already), with the heap before and after.
 */

const KEYED = new Set(['openai', 'anthropic']);
const ROUNDS = 200;

interface Labelled {
  id: string;
  label: 'easy' | 'hard';
  split: string;
  output_tokens: number;
  messages: unknown[];
  tools?: unknown[];
  response_format?: unknown;
}

function load(): { prompt: Labelled; body: ChatRequest; json: string }[] {
  const text = readFileSync(new URL('../data/routing-labelled.jsonl', import.meta.url), 'utf8');
  return text
    .split('\n')
    .filter((l) => l.trim())
    .map((line) => {
      const prompt = JSON.parse(line) as Labelled;
      const body = { model: 'auto', messages: prompt.messages, tools: prompt.tools, response_format: prompt.response_format } as ChatRequest;
      return { prompt, body, json: JSON.stringify(body) };
    });
}

const price = (m: RouteModel, prompt: number, output: number) =>
  costUsd({ promptTokens: prompt, cachedTokens: 0, cacheWriteTokens: 0, completionTokens: output, reasoningTokens: 0 }, m.entry) ?? 0;

function savings(items: ReturnType<typeof load>, requestedRef: string | undefined) {
  const policy = new RoutingPolicy({}, KEYED);
  const requested = requestedRef ? policy.resolve(requestedRef) : undefined;
  let moved = 0;
  let routedUsd = 0;
  let baselineUsd = 0;
  let hardToLight = 0;
  for (const { prompt, body } of items) {
    const fit = new PromptFit(body, promptShape(body));
    const choice = chooseRoute(policy, fit, { minTier: 1, held: undefined, requested })!;
    const baseline = requested ?? policy.baseline(fit)!;
    const tokens = countPromptTokens(prompt.messages, prompt.tools);
    const routed = price(choice.chosen, tokens, prompt.output_tokens);
    const base = price(baseline, tokens, prompt.output_tokens);
    routedUsd += routed;
    baselineUsd += base;
    if (routed < base) moved++;
    if (prompt.label === 'hard' && choice.tier === 1) hardToLight++;
  }
  return { moved: moved / items.length, routedUsd, baselineUsd, saved: 1 - routedUsd / baselineUsd, hardToLight };
}

/** Mean microseconds per item of `fn` over ROUNDS passes (after one warm-up pass). */
function perItemUs(items: ReturnType<typeof load>, fn: (item: ReturnType<typeof load>[number]) => unknown): number {
  let sink = 0;
  for (const item of items) sink += fn(item) ? 1 : 0;
  const started = process.hrtime.bigint();
  for (let r = 0; r < ROUNDS; r++) for (const item of items) sink += fn(item) ? 1 : 0;
  const ns = Number(process.hrtime.bigint() - started);
  if (sink < 0) log('unreachable');
  return ns / 1000 / (ROUNDS * items.length);
}

export async function routingBenchmark(): Promise<{ rows: Row[]; details: string[]; raw: Record<string, unknown> }> {
  log('routing: labelled prompts, savings and classifier speed (in process)');
  const items = load();
  const auto = savings(items, undefined);
  const explicit = savings(items, 'openai/gpt-5');
  globalThis.gc?.();
  const heapBefore = process.memoryUsage().heapUsed;
  const parseUs = perItemUs(items, (i) => JSON.parse(i.json));
  const classifyUs = perItemUs(items, (i) => classify(promptShape(i.body)).tier);
  const policy = new RoutingPolicy({}, KEYED);
  const routeUs = perItemUs(items, (i) => {
    const fit = new PromptFit(i.body, promptShape(i.body));
    return chooseRoute(policy, fit, { minTier: 1, held: undefined, requested: undefined });
  });
  // An explicit model, not routed: what every call pays now (its shape, fit and fallback chain).
  const explicitPolicy = new RoutingPolicy({}, KEYED);
  const named = explicitPolicy.resolve('openai/gpt-4o')!;
  const chainUs = perItemUs(items, (i) => explicitPolicy.fallbacks(named, 'openai/gpt-4o', new PromptFit(i.body, promptShape(i.body)), 2));
  globalThis.gc?.();
  const heapAfterMiB = (process.memoryUsage().heapUsed - heapBefore) / 2 ** 20;
  const usd = (x: number) => `$${x.toFixed(4)}`;
  const rows: Row[] = [
    {
      id: 'R1',
      benchmark: 'routing: model auto, labelled prompts moved to a cheaper model / cost saved',
      measured: `${pct(auto.moved)} moved, ${usd(auto.routedUsd)}`,
      baseline: `${usd(auto.baselineUsd)} (cheapest top tier)`,
      result: `${pct(auto.saved)} saved`,
      target: 'no target',
      pass: true,
      verdict: 'INFO',
    },
    {
      id: 'R2',
      benchmark: 'routing: explicit openai/gpt-5 routed, moved / cost saved',
      measured: `${pct(explicit.moved)} moved, ${usd(explicit.routedUsd)}`,
      baseline: `${usd(explicit.baselineUsd)} (gpt-5 for all)`,
      result: `${pct(explicit.saved)} saved`,
      target: 'no target',
      pass: true,
      verdict: 'INFO',
    },
    {
      id: 'R3',
      benchmark: 'routing: classifier / whole decision per request',
      measured: `${fmt(classifyUs, 1)} us / ${fmt(routeUs, 1)} us`,
      baseline: `JSON.parse of the body ${fmt(parseUs, 1)} us`,
      result: `${fmt(classifyUs / parseUs, 2)}x / ${fmt(routeUs / parseUs, 2)}x`,
      target: 'classifier < 1000 us',
      pass: classifyUs < 1000,
    },
    {
      id: 'R4',
      benchmark: 'routing: an explicit model not routed (fallback chain only) per request',
      measured: `${fmt(chainUs, 1)} us`,
      baseline: `JSON.parse of the body ${fmt(parseUs, 1)} us`,
      result: `${fmt(chainUs / parseUs, 2)}x`,
      target: 'no target',
      pass: true,
      verdict: 'INFO',
    },
  ];
  const details = [
    `Routing: ${items.length} labelled prompts (${items.filter((i) => i.prompt.label === 'easy').length} easy), priced at exact o200k prompt tokens and each line's assumed output tokens; hard prompts sent to tier 1: ${auto.hardToLight} (auto).`,
    `Routing speed: ${ROUNDS} passes over the set; heap ${fmt(heapAfterMiB, 1)} MiB above its start after them${globalThis.gc ? ' and a full GC' : ' (no --expose-gc: garbage included)'}.`,
  ];
  return { rows, details, raw: { routing: { auto, explicit, parseUs, classifyUs, routeUs, chainUs, heapAfterMiB } } };
}

/** `node bench/benchmarks/gateway-routing.ts` runs it alone and prints the figures. */
if (import.meta.url === `file://${process.argv[1]}`) {
  const { rows, details } = await routingBenchmark();
  for (const r of rows) process.stdout.write(`${r.id} ${r.benchmark}: ${r.measured} | ${r.baseline} | ${r.result}\n`);
  for (const d of details) process.stdout.write(`- ${d}\n`);
}

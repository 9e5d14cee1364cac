/**
 * Hostile request content for the data plane, shared by the hostile-input
 * suite (test/gateway/data-plane/hostile-input.test.ts) and its benchmark
 * (bench/benchmarks/gateway-hostile.ts): long runs of one character and the
 * patterns the classifier, the tokenizer and compaction once took quadratic
 * time on, the modes that send them through each stage, and bodies about
 * their shape (nesting, many keys).
 */

/** What each text repeats; `name` says what it is. */
export const HOSTILE_UNITS: readonly (readonly [name: string, unit: string])[] = [
  ['one letter', 'a'],
  ['spaces', ' '],
  ['newlines', '\n'],
  ['dollar signs', '$'],
  ['backslashes', '\\'],
  ['CJK without punctuation', '中'],
  ['indented lines ending in a brace', '\n    x {'],
  ['call sites without a closing parenthesis', 'f('],
  ['inline maths markers', '$x_'],
  ['slashes and newlines', '/\n'],
  ['SELECT without FROM', 'SELECT '],
  ['special tokens spelt out', '<|endoftext|>'],
];

/** `unit` repeated to about `bytes` once written in JSON, between two letters (so that it is a run inside a text). */
export function hostileText(unit: string, bytes: number): string {
  const each = Buffer.byteLength(JSON.stringify(unit)) - 2;
  return `a${unit.repeat(Math.max(1, Math.floor(bytes / each)))}b`;
}

/** The text in the system prompt, an assistant turn and the latest user message: where each stage reads. */
export function chatBody(text: string, model: string, stream: boolean): string {
  return JSON.stringify({
    model,
    stream,
    max_tokens: 50,
    messages: [
      { role: 'system', content: text },
      { role: 'user', content: 'Summarise what follows.' },
      { role: 'assistant', content: text },
      { role: 'user', content: text },
    ],
  });
}

/**
 * An agent's request carrying `text` as the results of six reads of one
 * file, each holding the one before it (superseded-reads compares them;
 * stale-results counts the whole prompt and clears the oldest).
 */
export function agentBody(text: string, model: string, stream: boolean): string {
  const messages: unknown[] = [
    { role: 'system', content: 'You are a coding agent.' },
    { role: 'user', content: 'Fix the file.' },
  ];
  for (let i = 1; i <= 6; i++) {
    messages.push({ role: 'assistant', content: null, tool_calls: [{ id: `call_${i}`, type: 'function', function: { name: 'read_file', arguments: '{"path":"a.txt"}' } }] });
    messages.push({ role: 'tool', tool_call_id: `call_${i}`, content: text.slice(0, Math.ceil((text.length * i) / 21)) });
  }
  messages.push({ role: 'assistant', content: 'Read.' }, { role: 'user', content: 'Go on.' });
  return JSON.stringify({ model, stream, max_tokens: 50, messages });
}

/** A chat request with an extra field nested `levels` deep (the body is one level more). */
export function nestedBody(levels: number): string {
  return JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }).replace(
    /}$/,
    `,"x":${'['.repeat(levels)}${']'.repeat(levels)}}`,
  );
}

/** A chat request with an extra object of `count` keys, in reverse order (the cache key sorts them). */
export function manyKeysBody(count: number): string {
  const keys: Record<string, number> = {};
  for (let i = count; i > 0; i--) keys[`k${i}`] = i;
  return JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], metadata_extra: keys });
}

/** Whose key a mode calls with: openai and anthropic keys, the same with limits, or no provider key. */
export type HostileTenant = 'full' | 'budgeted' | 'keyless';

export interface HostileMode {
  name: string;
  tenant: HostileTenant;
  model: string;
  stream: boolean;
  headers: Record<string, string>;
}

/** Between them, every stage in every mode: compaction off, safe, aggressive and under a budget; auto and a named model with fallbacks; the cache on and bypassed; streamed and not; prompt caching; limits; no provider key. */
export const HOSTILE_MODES: readonly HostileMode[] = [
  { name: 'named model with fallbacks, compaction off, no cache', tenant: 'full', model: 'openai/gpt-4o-mini', stream: false, headers: { 'x-gateway-compact': 'off', 'x-gateway-no-cache': 'true' } },
  { name: 'auto, safe, cache, streamed', tenant: 'full', model: 'auto', stream: true, headers: { 'x-gateway-compact': 'safe' } },
  { name: 'Anthropic, aggressive, prompt cache, streamed', tenant: 'full', model: 'anthropic/claude-sonnet-4-5', stream: true, headers: { 'x-gateway-compact': 'aggressive', 'x-gateway-prompt-cache': 'on', 'x-gateway-no-cache': 'true' } },
  { name: 'token budget 1000, cache', tenant: 'full', model: 'openai/gpt-4o-mini', stream: false, headers: { 'x-gateway-compact': '1000' } },
  { name: 'tenant with limits, auto, safe', tenant: 'budgeted', model: 'auto', stream: false, headers: { 'x-gateway-compact': 'safe', 'x-gateway-no-cache': 'true' } },
  { name: 'tenant without a provider key, token budget 1000', tenant: 'keyless', model: 'openai/gpt-4o-mini', stream: false, headers: { 'x-gateway-compact': '1000' } },
];

/** Limits high enough never to refuse: the budgets stages estimate, reserve and settle every call. */
export const HOSTILE_LIMITS = { requests_per_minute: 100_000, tokens_per_day: 1e12, usd_per_month: 1e6 };

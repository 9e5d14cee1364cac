import { createHash, hash } from 'node:crypto';
import { isSystemRole } from '../prompt-cache/prefix-length.ts';
import { mapText, textOf } from '../compaction/messages.ts';
import { normalizeWhitespace } from '../compaction/whitespace.ts';
import { countPromptTokens, countPromptTokensUpToPausing, countTokens, SLICE, yieldToLoop } from '../tokens.ts';

/**
 * A prompt as a provider's prompt cache sees it, for the savings accounting
 * (savings/account.ts): its elements in the provider's prompt order (the
 * tool definitions, then, for Anthropic, every system message, then the
 * other messages), and for each element where the prompt stands after it:
 * - `hashes[i]`: a digest of everything up to and including element i (two
 *   prompts with the same digest at i share that whole prefix);
 * - `tokens[i]`: the tokens up to and including element i, counted as
 *   src/gateway/tokens.ts counts (3 framing tokens per message);
 * - `blocks[i]`: the content blocks up to and including element i
 *   (Anthropic looks back 20 blocks from a breakpoint for a cached prefix);
 * - `client[i]` / `gateway[i]`: whether a cache breakpoint ends at element i,
 *   placed by the client (a `cache_control` it sent) or added by the gateway
 *   (the prompt-cache plan).
 * Linear in the prompt: one JSON text and at most one SHA-256 per element,
 * token counts remembered by that text (short ones) or its digest; a long
 * prompt hands the event loop back every 64 KiB of text, and a long element
 * not counted yet is tokenized a slice at a time (src/gateway/tokens.ts).
 */
export interface PromptProfile {
  hashes: Float64Array;
  tokens: Float64Array;
  blocks: Uint32Array;
  client: Uint8Array;
  gateway: Uint8Array;
  /** Tokens of the whole prompt, the reply's framing included (what the provider reports as prompt tokens). */
  total: number;
  /** Where the latest exchange starts (the last assistant message), as an element index; the length when there is none. */
  latestExchange: number;
  /** The longest cache lifetime a client breakpoint asked for (ms): 1 hour for `ttl: "1h"`, else 5 minutes. */
  ttlMs: number;
  /** The element index of the first user message (the prompt's start, for calls without a session); -1 when none. */
  firstUser: number;
  /**
   * Elements compaction changed (by index), for automatic caching, which
   * reads prefixes token by token: the prefix digest had the element gone as
   * it went while it was the latest exchange (its whitespace normalized),
   * and the tokens it still shares with that form (a cut output keeps its
   * head), so a read reaching into it is counted.
   */
  partial?: Map<number, { hash: number; tokens: number }>;
}

/** The client's messages a compacted prompt came from: `origin[i]` is the index in `messages` of sent message i. */
export interface Original {
  messages: readonly unknown[];
  origin: readonly number[];
}

export const FIVE_MINUTES = 5 * 60_000;
const ONE_HOUR = 60 * 60_000;
/** countPromptTokens' framing for the reply. */
const PER_REPLY = countPromptTokens([]);
/** countPromptTokens' framing of one message. */
const PER_MESSAGE = 3;
/** Characters of a compacted message's shared head counted exactly; past them the count is scaled. */
const PARTIAL_SAMPLE = 8192;
/** Element texts shorter than this are remembered as they are, longer ones by their digest. */
const DIGEST_FROM = 256;

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

export interface Breakpoints {
  tools: boolean;
  system: boolean;
  /** Indexes in `messages`. */
  messages: readonly number[];
}

/** Token counts by an element's text or digest: a conversation's history comes back on every turn. Bounded (cleared when full). */
export class ElementCounts {
  readonly #counts = new Map<string, number>();
  readonly #max: number;
  constructor(max = 20_000) {
    this.#max = max;
  }
  get(key: string): number | undefined {
    return this.#counts.get(key);
  }
  set(key: string, tokens: number): void {
    if (this.#counts.size >= this.#max) this.#counts.clear();
    this.#counts.set(key, tokens);
  }
}

/** One element's text key and token count, worked out once per call for messages the client's and the sent prompt share. */
interface Piece {
  key: string;
  tokens: number;
  blocks: number;
  client: boolean;
  ttlMs: number;
}

export class ProfileBuilder {
  readonly #counts: ElementCounts;
  /** This call's pieces by message object (the compacted prompt passes unchanged messages through as the same objects). */
  readonly #pieces = new WeakMap<object, Piece>();
  readonly #explicitPieces = new WeakMap<object, Piece>();

  /** False: digests only, every token count 0 (a state kept for later calls reads only its digests). */
  readonly #counting: boolean;

  constructor(counts: ElementCounts, options: { count?: boolean } = {}) {
    this.#counts = counts;
    this.#counting = options.count !== false;
  }

  async build(messages: readonly unknown[], tools: unknown, anthropicOrder: boolean, gateway?: Breakpoints, original?: Original): Promise<PromptProfile> {
    const order: number[] = [];
    if (anthropicOrder) {
      for (let i = 0; i < messages.length; i++) if (isSystemRole(roleOf(messages[i]))) order.push(i);
      for (let i = 0; i < messages.length; i++) if (!isSystemRole(roleOf(messages[i]))) order.push(i);
    } else for (let i = 0; i < messages.length; i++) order.push(i);
    const hasTools = Array.isArray(tools) && tools.length > 0;
    const n = order.length + (hasTools ? 1 : 0);
    const p: PromptProfile = {
      hashes: new Float64Array(n),
      tokens: new Float64Array(n),
      blocks: new Uint32Array(n),
      client: new Uint8Array(n),
      gateway: new Uint8Array(n),
      total: PER_REPLY,
      latestExchange: n,
      ttlMs: FIVE_MINUTES,
      firstUser: -1,
    };
    let chain = '';
    let tokens = 0;
    let blocks = 0;
    let at = 0;
    const add = (piece: Piece, gatewayMark: boolean) => {
      // Each prefix's digest from the one before and this element's key (its text when short, else a SHA-256 of it).
      chain = hash('sha1', `${chain}\0${piece.key}`, 'hex');
      p.hashes[at] = Number.parseInt(chain.slice(0, 12), 16);
      tokens += piece.tokens;
      blocks += piece.blocks;
      p.tokens[at] = tokens;
      p.blocks[at] = blocks;
      p.client[at] = piece.client ? 1 : 0;
      p.gateway[at] = gatewayMark ? 1 : 0;
      if (piece.ttlMs > p.ttlMs) p.ttlMs = piece.ttlMs;
      at++;
    };
    if (hasTools) add(await this.#toolsPiece(tools as unknown[], anthropicOrder), gateway?.tools === true);
    let lastSystem = -1;
    for (let k = 0; k < order.length; k++) if (isSystemRole(roleOf(messages[order[k]!]))) lastSystem = k;
    const gatewayMessages = new Set(gateway?.messages ?? []);
    for (let k = 0; k < order.length; k++) {
      const i = order[k]!;
      const role = roleOf(messages[i]);
      if (role === 'user' && p.firstUser < 0) p.firstUser = at;
      if (role === 'assistant') p.latestExchange = at;
      const before = original?.messages[original.origin[i] ?? -1];
      if (!anthropicOrder && before !== undefined && before !== messages[i]) this.#partial(p, at, chain, before, messages[i]);
      add(await this.#messagePiece(messages[i], anthropicOrder), gatewayMessages.has(i) || (gateway?.system === true && k === lastSystem));
    }
    p.total = tokens + PER_REPLY;
    return p;
  }

  /** Records what element `at` (compacted from `before`) shares with `before` as the latest exchange carried it. */
  #partial(p: PromptProfile, at: number, chain: string, before: unknown, now: unknown): void {
    if (!isObject(before) || !isObject(now)) return;
    const content = mapText(before['content'], normalizeWhitespace);
    const earlier = { ...before, content };
    const key = keyOf(`m${JSON.stringify(earlier) ?? ''}`);
    const a = textOf(content);
    const b = textOf(now['content']);
    let common = 0;
    if (a !== undefined && b !== undefined) {
      const n = Math.min(a.length, b.length);
      while (common < n && a.charCodeAt(common) === b.charCodeAt(common)) common++;
    }
    // The message's framing, then its text up to where the two part (less one token, which may straddle the cut);
    // a long shared head is counted on its first 8 KiB and scaled, so this stays cheap whatever the message.
    let shared = 0;
    if (common > 0) {
      const sample = Math.min(common, PARTIAL_SAMPLE);
      shared = Math.round((countTokens(a!.slice(0, sample)) * common) / sample);
    }
    const tokens = common === 0 ? 0 : PER_MESSAGE + Math.max(0, shared - 1);
    p.partial ??= new Map();
    p.partial.set(at, { hash: Number.parseInt(hash('sha1', `${chain}\0${key}`, 'hex').slice(0, 12), 16), tokens });
  }

  /** Characters of text handled since the event loop was last handed back. */
  #since = 0;

  async #count(key: string, length: number, messages: readonly unknown[], tools: unknown): Promise<number> {
    if (!this.#counting) return 0;
    this.#since += length;
    if (this.#since >= SLICE) {
      this.#since = 0;
      await yieldToLoop();
    }
    const known = this.#counts.get(key);
    if (known !== undefined) return known;
    const tokens =
      (length < SLICE ? countPromptTokens(messages, tools) : await countPromptTokensUpToPausing(messages, tools, Number.POSITIVE_INFINITY)) - PER_REPLY;
    this.#counts.set(key, tokens);
    return tokens;
  }

  async #toolsPiece(tools: unknown[], explicit: boolean): Promise<Piece> {
    const json = (explicit ? JSON.stringify(tools, canonical) : JSON.stringify(tools)) ?? '';
    const key = keyOf(`t${json}`);
    const tokens = await this.#count(key, json.length, [], tools);
    let client = false;
    for (const tool of tools) if (isObject(tool) && isObject(tool['cache_control'])) client = true;
    return { key, tokens, blocks: tools.length, client, ttlMs: ttlOf(tools) };
  }

  /**
   * `explicit`: counted as Anthropic's blocks hold it, a tool call as its
   * name and its arguments (not the OpenAI wrapper with its id and escaped
   * JSON, which can be a large share of an agent's assistant turns).
   */
  async #messagePiece(message: unknown, explicit: boolean): Promise<Piece> {
    const object = isObject(message) ? message : undefined;
    const pieces = explicit ? this.#explicitPieces : this.#pieces;
    const known = object && pieces.get(object);
    if (known) return known;
    // Anthropic's cache compares blocks without their marks; an OpenAI-format prompt is compared as it is sent.
    const json = (explicit ? JSON.stringify(message, canonical) : JSON.stringify(message)) ?? '';
    const key = keyOf(`m${json}`);
    const counted = explicit && object && Array.isArray(object['tool_calls']) ? asBlocks(object) : message;
    const tokens = await this.#count(explicit ? `x${key}` : key, json.length, [counted], undefined);
    const content = object?.['content'];
    const calls = object?.['tool_calls'];
    const blocks = Math.max(1, (Array.isArray(content) ? content.length : 1) + (Array.isArray(calls) ? calls.length : 0));
    let client = false;
    if (Array.isArray(content)) for (const part of content) if (isObject(part) && isObject(part['cache_control'])) client = true;
    const piece = { key, tokens, blocks, client, ttlMs: Array.isArray(content) ? ttlOf(content) : FIVE_MINUTES };
    if (object) pieces.set(object, piece);
    return piece;
  }
}

/**
 * What a provider's cache compares, as JSON: without the cache_control marks
 * (moving a breakpoint changes no content) and with a string content as the
 * one text block providers turn it into.
 */
function canonical(key: string, value: unknown): unknown {
  if (key === 'cache_control') return undefined;
  if (key === 'content' && typeof value === 'string') return [{ type: 'text', text: value }];
  return value;
}

/** An assistant message with its tool calls as text parts: each call's name and arguments, as Anthropic's tool_use blocks carry them. */
function asBlocks(message: Json): Json {
  const content = message['content'];
  const parts: unknown[] = typeof content === 'string' ? [{ type: 'text', text: content }] : Array.isArray(content) ? [...content] : [];
  for (const call of message['tool_calls'] as unknown[]) {
    const fn = isObject(call) && isObject(call['function']) ? call['function'] : undefined;
    if (typeof fn?.['name'] === 'string') parts.push({ type: 'text', text: fn['name'] });
    if (typeof fn?.['arguments'] === 'string') parts.push({ type: 'text', text: fn['arguments'] });
  }
  return { role: message['role'], content: parts };
}

const roleOf = (message: unknown) => (isObject(message) ? message['role'] : undefined);
const keyOf = (text: string) => (text.length < DIGEST_FROM ? text : createHash('sha256').update(text).digest('base64'));

/** 1 hour when any of the parts' cache_control asks for it, else 5 minutes. */
function ttlOf(parts: readonly unknown[]): number {
  for (const part of parts) if (isObject(part) && isObject(part['cache_control']) && part['cache_control']['ttl'] === '1h') return ONE_HOUR;
  return FIVE_MINUTES;
}

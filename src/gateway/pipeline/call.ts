import type { IncomingHttpHeaders } from 'node:http';
import type { Writable } from 'node:stream';
import type { FastifyBaseLogger } from 'fastify';
import type { CatalogModel } from '../catalog/models.ts';
import type { ApiKeyPrincipal } from '../data-plane/api-key-auth.ts';
import type { HeaderList } from '../header-list.ts';
import type { TenantContext } from '../data-plane/tenant-context.ts';
import type { ProviderInfo } from '../providers/registry.ts';
import type { ChatRequest, PromptCachePlan, ProviderAdapter, TokenUsage } from '../providers/types.ts';
import type { CircuitKeys } from '../routing/circuit-breaker.ts';
import type { RouteModel } from '../routing/policy.ts';
import type { Surface } from '../surfaces/surface.ts';

/** `partial`: an embeddings call answered in part from the cache, the rest upstream (surfaces/embeddings/input-cache.ts). */
export type CacheStatus = 'miss' | 'hit' | 'dedup' | 'bypass' | 'partial';

/** What each stage saved on this call, in USD (the usage record keeps each; their sum is X-Gateway-Cost-Saved). */
export interface Savings {
  /** A cache hit or a dedup: the whole cost of the reused answer. */
  cache: number;
  compaction: number;
  routing: number;
  promptCache: number;
}

/** One upstream attempt (retries and fallbacks add more). */
export interface Attempt {
  /** `provider/model`. */
  model: string;
  status: number;
  errorCode: string | undefined;
  ms: number;
}

/** What a call's answer fills in, as it stands before any answer (a new call, or dedup's own upstream call). */
export function unanswered(): Pick<
  Call,
  'usage' | 'costUsd' | 'modelUsed' | 'upstreamMs' | 'overheadMs' | 'result' | 'storedResponse' | 'usageChunkSent' | 'streamOpened' | 'status' | 'errorCode'
> {
  return {
    usage: undefined,
    costUsd: undefined,
    modelUsed: undefined,
    upstreamMs: 0,
    overheadMs: undefined,
    result: undefined,
    storedResponse: undefined,
    usageChunkSent: undefined,
    streamOpened: false,
    status: 200,
    errorCode: undefined,
  };
}

export function totalSaved(call: Pick<Call, 'saved'>): number {
  const s = call.saved;
  return s.cache + s.compaction + s.routing + s.promptCache;
}

/** Where a call goes: chosen by routing (today: the model the client named). */
export interface CallTarget {
  provider: ProviderInfo;
  /** The provider's model id. */
  model: string;
  /** `provider/model`: how the cache key, the attempts and the metrics name it. */
  ref: string;
  entry: CatalogModel | undefined;
  adapter: ProviderAdapter;
  apiKey: string;
  baseUrl: URL;
  /** The circuits this target's calls pass (routing/circuit-breaker.ts): the tenant's own and the origin's. */
  circuit: CircuitKeys;
}

/**
 * One data-plane call as it moves through the pipeline. Stages read what
 * earlier stages decided and add their own part; the route turns the result
 * into the reply and the X-Gateway-* headers.
 */
export interface Call {
  readonly requestId: string;
  /** performance.now() when the request arrived. */
  readonly startedAt: number;
  /** Epoch ms, for the usage record. */
  readonly receivedAt: number;
  readonly principal: ApiKeyPrincipal;
  readonly tenant: TenantContext;
  /** The front door the call came through: its adapters shape the upstream request and the answer (surfaces/). */
  readonly surface: Surface;
  /** The request in the stages' form (Chat Completions); a surface of another format keeps its client's own body beside it. */
  body: ChatRequest;
  readonly stream: boolean;
  /** The client asked for `stream_options.include_usage`. */
  readonly includeUsage: boolean;
  readonly modelRequested: string;
  readonly sessionId: string | undefined;
  readonly tag: string | undefined;
  /** The request's headers, for stages that take a per-call instruction (X-Gateway-Compact, X-Gateway-Prompt-Cache). */
  readonly headers: IncomingHttpHeaders;
  /** Headers a stage adds to this call's answer (x-ratelimit-*), sent with the X-Gateway-* ones: names and values, flat. */
  readonly replyHeaders: HeaderList;
  /** X-Gateway-No-Route: true: exactly the model named, no routing and no fallback (retries still). */
  readonly noRoute: boolean;
  /**
   * Aborts when the call's work must stop: its client went away before the
   * answer was complete (unless onClientClose is set), or `abort()`. The
   * upstream request, retries and a stream's relay all follow it.
   */
  readonly signal: AbortSignal;
  /** Aborts `signal`. */
  readonly abort: () => void;
  /**
   * While set, what the client going away early does instead of aborting
   * `signal`: a dedup leader's flight sets it, so that the call goes on for
   * the clients that joined it (cache/in-flight.ts).
   */
  onClientClose: (() => void) | undefined;
  readonly log: FastifyBaseLogger;
  /** The raw response (a ServerResponse; dedup's own call writes to its fan-out instead), written directly once a stream starts. */
  readonly response: Writable;
  /** Writes the status line and headers of a stream (the X-Gateway-* headers as known then). */
  readonly openStream: () => void;

  target: CallTarget | undefined;
  /**
   * Where the call may go, in order: routing's choice first, then the
   * fallbacks that fit the request (the upstream stage walks it). Empty until
   * the routing stage ran.
   */
  targets: CallTarget[];
  /** Why routing chose `target` (X-Gateway-Route-Reason); undefined when the named model was called as named. */
  routeReason: string | undefined;
  /** Every upstream attempt, in order (the last one answered, or failed the call). */
  attempts: Attempt[];
  /** The prompt-cache stage's plan, handed to the adapter on every attempt. */
  promptCache: PromptCachePlan | undefined;
  /** `X-Gateway-No-Cache: true`: the cache is neither read nor written, and no in-flight call is joined. */
  readonly noCache: boolean;
  /** The response-cache key (tenant, routed model, canonical request); set by the cache stage unless bypassed. */
  cacheKey: string | undefined;
  cacheStatus: CacheStatus;
  /** Age of the cache entry that answered, in seconds (hits only). */
  cacheAgeS: number | undefined;
  /** What compaction did: "none", or the strategies applied, comma-separated (X-Gateway-Compaction). */
  compaction: string;
  /** The messages as the client sent them, when compaction changed them (call.body holds what is sent). */
  clientMessages: readonly unknown[] | undefined;
  /** With clientMessages: for each message sent, the index of the client's message it comes from. */
  compactionOrigin: readonly number[] | undefined;
  /**
   * The model the client named (or, for `auto`, routing's baseline), when
   * routing chose: the client's request sent directly would have gone there,
   * and the savings stage measures routing's saving against it.
   */
  baseline: RouteModel | undefined;
  /** Prompt tokens compaction removed from the request. */
  compactionSavedTokens: number;
  /** Tokens the call did not pay for: a hit's or dedup's prompt and completion tokens, plus what compaction removed. */
  tokensSaved: number;
  saved: Savings;
  /**
   * What the provider's prompt cache saved on this call that the gateway does
   * not claim (automatic caching, and reads at breakpoints the client placed),
   * in USD: reported beside the gateway's saving, never inside it.
   */
  providerCacheSaved: number;
  usage: TokenUsage | undefined;
  /** USD; undefined when the model has no price in the catalog. */
  costUsd: number | undefined;
  /** The model that answered, as the provider named it. */
  modelUsed: string | undefined;
  /** Time spent waiting on the provider, ms. */
  upstreamMs: number;
  /** The gateway's own time before the first byte went out, ms (set when the answer starts). */
  overheadMs: number | undefined;
  /** The complete (non-streamed) answer body. */
  result: string | undefined;
  /** The answer as sent (streams: the SSE text), kept only when the tenant stores bodies. */
  storedResponse: string | undefined;
  /**
   * A reused answer's usage chunk as this call's stream was sent it (a cache
   * hit, a dedup follower): a Responses stream's carries the whole response,
   * which the surface stores (surfaces/responses/).
   */
  usageChunkSent: string | undefined;
  /** True once the stream's headers were written: errors can then only travel inside the stream. */
  streamOpened: boolean;
  status: number;
  errorCode: string | undefined;
}

/**
 * A pipeline stage: does its part, and calls `next` to hand the call on (or
 * answers without it: a cache hit). `next(other)` hands the rest of the
 * pipeline another call instead (in-flight dedup runs the upstream call
 * for several clients on a call of its own).
 */
export type Stage = (call: Call, next: (call?: Call) => Promise<void>) => Promise<void>;

/** Runs the stages in order, each around the rest (the first stage sees the whole call, the last makes it). */
export function compose(stages: readonly Stage[]): (call: Call) => Promise<void> {
  const step = (i: number, call: Call): Promise<void> => {
    const stage = stages[i];
    return stage ? stage(call, (other) => step(i + 1, other ?? call)) : Promise.resolve();
  };
  return (call) => step(0, call);
}

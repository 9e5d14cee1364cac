import type { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Dispatcher } from 'undici';
import type { Clock } from '../../../platform/clock.ts';
import { HttpProblem } from '../../../platform/errors.ts';
import { costUsd } from '../../catalog/cost.ts';
import type { RoutingConfig } from '../../config.ts';
import { type Collected, collectResponse } from '../../data-plane/collect-response.ts';
import type { UpstreamPools } from '../../data-plane/upstream-pools.ts';
import { UpstreamShares } from '../../data-plane/upstream-shares.ts';
import { upstreamConcurrencyLimited, upstreamInvalid, upstreamTimeout, upstreamUnreachable } from '../../openai-errors.ts';
import type { CallContext, ProviderAdapter, TokenUsage, UpstreamRequest } from '../../providers/types.ts';
import type { CircuitBreakers } from '../../routing/circuit-breaker.ts';
import { localBug, requestNotSendable, requestNotTranslatable, upstreamResponseTooLarge } from '../../routing/local-failure.ts';
import { planAfterFailure, retryDelayMs } from '../../routing/retry.ts';
import type { Call, CallTarget, Stage } from '../call.ts';
import { relayStream } from './relay-stream.ts';

export interface UpstreamSettings {
  pools: UpstreamPools;
  /** Each tenant's share of an origin's connections: a call past it waits for its tenant's own calls, at most until its first-byte deadline. */
  shares: UpstreamShares;
  /** Until the response headers arrive. */
  firstByteTimeoutMs: number;
  /** Longest silence between two body chunks. */
  idleTimeoutMs: number;
  /** Largest non-streamed answer read (a provider answering more is broken). */
  maxResponseBytes: number;
}

/** An error body is read only this far: enough for any provider's message. */
const ERROR_BODY_LIMIT = 64 * 1024;

export interface Reliability {
  config: RoutingConfig;
  breakers: CircuitBreakers;
  clock: Clock;
}

/**
 * The last stage: the provider call, along `call.targets` (routing's choice,
 * then its fallbacks). Each target is tried, and retried after a 429, 408,
 * 5xx or timeout with backoff (Retry-After honoured up to the configured
 * cap) before the next one is; a provider refusing the tenant's key (401,
 * 403) is not retried but may fall back to another provider; any other 4xx
 * is the answer (routing/retry.ts). A provider whose circuit is open is
 * skipped (routing/circuit-breaker.ts). A stream is retried only before its
 * first byte reached the client: relay-stream.ts throws until then, and
 * ends the stream itself after. Every try is one entry of `call.attempts`;
 * `call.target` is the target that answered (X-Gateway-Model).
 */
export function upstreamStage(settings: UpstreamSettings, reliability: Reliability): Stage {
  const { config, breakers, clock } = reliability;
  const attempt = attemptOnce(settings);
  return async function callProvider(call) {
    const targets = call.targets.length > 0 ? call.targets : call.target ? [call.target] : [];
    if (targets.length === 0) throw new Error('no target: the routing stage must run before the upstream stage');
    const routedBecause = call.routeReason;
    let last: HttpProblem | undefined;
    let firstFailed: string | undefined;
    let refused: Set<string> | undefined;
    let openForMs = Number.POSITIVE_INFINITY;
    for (const target of targets) {
      const ref = target.ref;
      if (refused?.has(target.provider.id)) continue;
      const circuit = target.circuit;
      if (!breakers.admit(circuit)) {
        call.attempts.push({ model: ref, status: 503, errorCode: 'circuit_open', ms: 0 });
        openForMs = Math.min(openForMs, breakers.retryInMs(circuit));
        firstFailed ??= ref;
        continue;
      }
      if (firstFailed !== undefined) {
        const from = `fallback from ${firstFailed} (${last?.code ?? 'circuit_open'})`;
        call.routeReason = routedBecause ? `${routedBecause}; ${from}` : from;
      }
      for (let retry = 0; ; retry++) {
        call.target = target;
        const startedAt = performance.now();
        try {
          await attempt(call, target);
          call.attempts.push({ model: ref, status: call.status, errorCode: call.errorCode, ms: round(performance.now() - startedAt) });
          breakers.success(circuit);
          return;
        } catch (err) {
          const problem = err instanceof HttpProblem ? err : transportError(target, err, call.signal);
          call.attempts.push({ model: ref, status: problem.status, errorCode: problem.code, ms: round(performance.now() - startedAt) });
          const plan = planAfterFailure(problem);
          if (plan.counts === 'nowhere') breakers.neutral(circuit);
          else breakers.failure(circuit, plan.counts);
          if (plan.next === 'stop' || call.streamOpened || call.signal.aborted) throw problem;
          last = problem;
          firstFailed ??= ref;
          if (plan.next === 'other-provider') {
            refused ??= new Set();
            refused.add(target.provider.id);
            break;
          }
          if (retry >= config.retries) break;
          const delay = retryDelayMs(retry, problem, config, clock.now());
          if (delay > config.retryMaxDelayMs) break; // the provider asks for a longer pause than we wait: the fallbacks go first
          // Time spent waiting for the provider to recover counts as upstream time, not the gateway's overhead.
          try {
            await sleep(delay, undefined, { signal: call.signal });
          } catch (abort) {
            throw transportError(target, abort, call.signal);
          } finally {
            call.upstreamMs += delay;
          }
          if (!breakers.admit(circuit)) break;
        }
      }
    }
    throw last ?? circuitOpen(targets[0]!.provider.name, openForMs);
  };
}

const round = (ms: number) => Math.round(ms * 100) / 100;

const circuitOpen = (provider: string, retryInMs: number) =>
  new HttpProblem(503, 'upstream_circuit_open', `The ${provider} API failed repeatedly and is skipped for a while; try again shortly.`, {
    type: 'api_error',
    headers: { 'retry-after': String(Math.max(1, Math.ceil(retryInMs / 1000))) },
  });

/** One call to one target: the request in the provider's wire format, the answer (or stream) back in OpenAI's. */
function attemptOnce(settings: UpstreamSettings) {
  const shares = settings.shares;
  return async function callTarget(call: Call, target: CallTarget): Promise<void> {
    const ctx: CallContext = {
      model: target.model,
      apiKey: target.apiKey,
      baseUrl: target.baseUrl,
      requestId: call.requestId,
      created: Math.floor(call.receivedAt / 1000),
      promptCache: call.promptCache,
    };
    // The call's surface picks the adapter: the provider's own, or one that passes its client's request through or translates.
    const adapter = call.surface.adapter(target, call);
    let outgoing: UpstreamRequest;
    try {
      outgoing = adapter.chatRequest(call.body, ctx);
    } catch (err) {
      throw notSent(target, err);
    }
    // The tenant's share of the origin's connections, held until the answer or the stream has ended however it ends.
    const tenantId = call.tenant.tenantId;
    const share = UpstreamShares.key(tenantId, target.baseUrl.origin);
    if (!shares.tryAcquire(share)) {
      // Waiting on its own tenant's calls is upstream time, not the gateway's overhead. The deadline is the call's, not
      // the attempt's: a retry or a fallback to the same origin does not wait again.
      const waitedFrom = performance.now();
      try {
        await shares.wait(share, call.signal, call.startedAt + settings.firstByteTimeoutMs, () =>
          upstreamConcurrencyLimited(target.provider.name, shares.perTenant),
        );
      } catch (err) {
        throw transportError(target, err, call.signal);
      } finally {
        call.upstreamMs += performance.now() - waitedFrom;
      }
    }
    try {
      await send(call, target, adapter, ctx, outgoing, settings.pools.get(target.baseUrl, tenantId));
    } finally {
      shares.release(share);
    }
  };
  async function send(call: Call, target: CallTarget, adapter: ProviderAdapter, ctx: CallContext, outgoing: UpstreamRequest, pool: Dispatcher): Promise<void> {
    // What both ways of calling send: non-streamed answers are collected whole, streams keep request()'s body stream.
    const sent = {
      path: outgoing.path,
      headers: outgoing.headers,
      body: outgoing.body,
      signal: call.signal,
      headersTimeout: settings.firstByteTimeoutMs,
      bodyTimeout: settings.idleTimeoutMs,
    };
    const sentAt = performance.now();
    if (!call.stream) {
      let answer: Collected;
      try {
        answer = await collectResponse(pool, {
          ...sent,
          maxBytes: settings.maxResponseBytes,
          errorBytes: ERROR_BODY_LIMIT,
          tooLarge: () => upstreamResponseTooLarge(settings.maxResponseBytes),
        });
      } catch (err) {
        throw transportError(target, err, call.signal);
      } finally {
        call.upstreamMs += performance.now() - sentAt;
      }
      if (answer.statusCode < 200 || answer.statusCode >= 300) throw adapter.upstreamError(answer.statusCode, answer.body, answer.headers);
      let result: ReturnType<typeof adapter.chatResponse>;
      try {
        result = adapter.chatResponse(answer.statusCode, answer.body, ctx);
      } catch (err) {
        throw err instanceof HttpProblem ? err : localBug(err); // the adapter's own errors say what the answer was
      }
      settle(call, target, result.usage, result.model);
      call.result = result.body;
      if (call.tenant.storeBodies) call.storedResponse = result.body;
      call.overheadMs = performance.now() - call.startedAt - call.upstreamMs;
      return;
    }
    let response: Dispatcher.ResponseData;
    try {
      response = await pool.request({ ...sent, method: 'POST' });
    } catch (err) {
      call.upstreamMs += performance.now() - sentAt;
      throw transportError(target, err, call.signal);
    }
    const { statusCode, headers, body } = response;
    if (statusCode < 200 || statusCode >= 300) {
      const text = await readBody(body, ERROR_BODY_LIMIT).catch(() => Buffer.alloc(0));
      call.upstreamMs += performance.now() - sentAt;
      throw adapter.upstreamError(statusCode, text, headers);
    }
    call.upstreamMs += performance.now() - sentAt;
    const stream = adapter.chatStream(ctx, { includeUsage: call.includeUsage, cost: (usage) => costUsd(usage, target.entry) });
    await relayStream(call, body, stream, (err) => transportError(target, err, call.signal));
    settle(call, target, stream.usage, stream.model);
  }
}

function settle(call: Call, target: CallTarget, usage: TokenUsage | undefined, model: string | undefined): void {
  call.usage = usage;
  call.modelUsed = model ?? target.model;
  call.costUsd = usage ? costUsd(usage, target.entry) : undefined;
}

/**
 * Reads a stream's error body up to `limit` bytes; the rest is discarded.
 * Listens for its events rather than iterating it: an async iterator costs a
 * few promises and ticks per chunk.
 */
function readBody(body: Readable, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = () => {
      body.off('data', onData).off('end', done).off('error', reject);
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
    };
    const onData = (chunk: Buffer) => {
      if (size + chunk.length <= limit) {
        chunks.push(chunk);
        size += chunk.length;
        return;
      }
      body.off('data', onData).off('end', done).off('error', reject);
      body.destroy();
      chunks.push(chunk.subarray(0, limit - size));
      resolve(Buffer.concat(chunks));
    };
    body.on('data', onData).once('end', done).once('error', reject);
  });
}

/**
 * Building the upstream request failed: nothing was sent. The adapter's own
 * refusals (HttpProblem: a field the provider cannot take) stand as they
 * are; a RangeError is the request's size or depth beyond what the
 * translation can hold; anything else is our bug.
 */
function notSent(target: CallTarget, err: unknown): HttpProblem {
  if (err instanceof HttpProblem) return err;
  if (err instanceof RangeError) return requestNotTranslatable(target.provider.name, err);
  return localBug(err);
}

const TIMEOUTS = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/**
 * What a failed connection or read is answered with. The client's own
 * disconnect is 499, as nginx logs it. The HTTP client refusing its
 * arguments (a header value it cannot write) happens before any connection:
 * a LocalFailure, not the upstream's.
 */
export function transportError(target: CallTarget, err: unknown, signal: AbortSignal): HttpProblem {
  if (err instanceof HttpProblem) return err;
  if (signal.aborted) return new HttpProblem(499, 'client_closed_request', 'The client closed the connection.', { cause: err });
  const code = (err as { code?: unknown } | null)?.code;
  if (code === 'UND_ERR_INVALID_ARG') return requestNotSendable(target.provider.name, err);
  // A base_url whose host now resolves to a forbidden address is "could not be reached", as an unresolvable one is: two answers would be an oracle for internal names.
  if (typeof code === 'string' && TIMEOUTS.has(code)) return upstreamTimeout(target.provider.name, err);
  if (err instanceof SyntaxError) return upstreamInvalid(target.provider.name, err);
  return upstreamUnreachable(target.provider.name, err);
}

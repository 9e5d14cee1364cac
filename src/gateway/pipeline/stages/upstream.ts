import type { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import { HttpProblem } from '../../../platform/errors.ts';
import { costUsd } from '../../catalog/cost.ts';
import type { UpstreamPools } from '../../data-plane/upstream-pools.ts';
import { upstreamForbiddenAddress, upstreamInvalid, upstreamTimeout, upstreamUnreachable } from '../../openai-errors.ts';
import type { CallContext, TokenUsage } from '../../providers/types.ts';
import type { Call, CallTarget, Stage } from '../call.ts';
import { relayStream } from './relay-stream.ts';

export interface UpstreamSettings {
  pools: UpstreamPools;
  /** Until the response headers arrive. */
  firstByteTimeoutMs: number;
  /** Longest silence between two body chunks. */
  idleTimeoutMs: number;
  /** Largest non-streamed answer read (a provider answering more is broken). */
  maxResponseBytes: number;
}

/** An error body is read only this far: enough for any provider's message. */
const ERROR_BODY_LIMIT = 64 * 1024;

/**
 * The last stage: the call to the provider, over the origin's keep-alive
 * pool, with the adapter turning the request and the answer into and out of
 * the provider's wire format. A client that goes away aborts the upstream
 * request (the call's signal). Provider errors arrive in the OpenAI shape.
 */
export function upstreamStage(settings: UpstreamSettings): Stage {
  return async function callProvider(call) {
    const target = call.target;
    if (!target) throw new Error('no target: the routing stage must run before the upstream stage');
    const ctx: CallContext = {
      model: target.model,
      apiKey: target.apiKey,
      baseUrl: target.baseUrl,
      requestId: call.requestId,
      created: Math.floor(call.receivedAt / 1000),
      promptCache: call.promptCache,
    };
    const outgoing = target.adapter.chatRequest(call.body, ctx);
    const sentAt = performance.now();
    let response: Dispatcher.ResponseData;
    try {
      response = await settings.pools.get(target.baseUrl).request({
        method: 'POST',
        path: outgoing.path,
        headers: outgoing.headers,
        body: outgoing.body,
        signal: call.signal,
        headersTimeout: settings.firstByteTimeoutMs,
        bodyTimeout: settings.idleTimeoutMs,
      });
    } catch (err) {
      call.upstreamMs += performance.now() - sentAt;
      throw transportError(target, err, call.signal);
    }
    const { statusCode, headers, body } = response;
    if (statusCode < 200 || statusCode >= 300) {
      const text = await readBody(body, ERROR_BODY_LIMIT, true).catch(() => Buffer.alloc(0));
      call.upstreamMs += performance.now() - sentAt;
      throw target.adapter.upstreamError(statusCode, text, headers);
    }
    if (!call.stream) {
      let raw: Buffer;
      try {
        raw = await readBody(body, settings.maxResponseBytes, false);
      } catch (err) {
        throw err instanceof HttpProblem ? err : transportError(target, err, call.signal);
      } finally {
        call.upstreamMs += performance.now() - sentAt;
      }
      const result = target.adapter.chatResponse(statusCode, raw, ctx);
      settle(call, target, result.usage, result.model);
      call.result = result.body;
      if (call.tenant.storeBodies) call.storedResponse = result.body;
      call.overheadMs = performance.now() - call.startedAt - call.upstreamMs;
      return;
    }
    call.upstreamMs += performance.now() - sentAt;
    const stream = target.adapter.chatStream(ctx, { includeUsage: call.includeUsage, cost: (usage) => costUsd(usage, target.entry) });
    await relayStream(call, body, stream, (err) => transportError(target, err, call.signal));
    settle(call, target, stream.usage, stream.model);
  };
}

function settle(call: Call, target: CallTarget, usage: TokenUsage | undefined, model: string | undefined): void {
  call.usage = usage;
  call.modelUsed = model ?? target.model;
  call.costUsd = usage ? costUsd(usage, target.entry) : undefined;
}

/** Reads a body up to `limit` bytes; past it, the rest is discarded (`truncate`) or the call fails. */
async function readBody(body: Readable, limit: number, truncate: boolean): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    if (size + chunk.length > limit) {
      if (truncate) {
        chunks.push(chunk.subarray(0, limit - size));
        body.destroy();
        break;
      }
      body.destroy();
      throw new HttpProblem(502, 'upstream_response_too_large', `The provider's answer is larger than ${limit} bytes.`, { type: 'api_error' });
    }
    chunks.push(chunk);
    size += chunk.length;
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
}

const TIMEOUTS = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/** What a failed connection or read is answered with. The client's own disconnect is 499, as nginx logs it. */
export function transportError(target: CallTarget, err: unknown, signal: AbortSignal): HttpProblem {
  if (err instanceof HttpProblem) return err;
  if (signal.aborted) return new HttpProblem(499, 'client_closed_request', 'The client closed the connection.', { cause: err });
  const code = (err as { code?: unknown } | null)?.code;
  if (code === 'forbidden_address' || (err as { cause?: { code?: unknown } })?.cause?.code === 'forbidden_address') {
    return upstreamForbiddenAddress(target.provider.name);
  }
  if (typeof code === 'string' && TIMEOUTS.has(code)) return upstreamTimeout(target.provider.name, err);
  if (err instanceof SyntaxError) return upstreamInvalid(target.provider.name, err);
  return upstreamUnreachable(target.provider.name, err);
}

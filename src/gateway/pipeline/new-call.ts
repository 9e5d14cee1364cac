import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Clock } from '../../platform/clock.ts';
import type { TenantContext } from '../data-plane/tenant-context.ts';
import type { HeaderList } from '../header-list.ts';
import { invalidHeader } from '../openai-errors.ts';
import { clientWantsUsage } from '../providers/adapters.ts';
import type { ChatRequest } from '../providers/types.ts';
import { CHAT_COMPLETIONS } from '../surfaces/chat-completions/surface.ts';
import type { Surface } from '../surfaces/surface.ts';
import { type Call, unanswered } from './call.ts';

/** X-Gateway-Session-Id and X-Gateway-Tag: at most 128 visible ASCII characters (they land in logs, records and filters). */
const LABEL = /^[\x21-\x7e](?:[\x20-\x7e]{0,126}[\x21-\x7e])?$/;

function label(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !LABEL.test(value)) {
    throw invalidHeader(name, 'must be 1 to 128 printable ASCII characters, sent once.');
  }
  return value;
}

/** A client's own session header: its value when it is a valid label, else nothing (it is not ours to refuse). */
function clientLabel(request: FastifyRequest, name: string | undefined): string | undefined {
  if (name === undefined) return undefined;
  const value = request.headers[name];
  return typeof value === 'string' && LABEL.test(value) ? value : undefined;
}

/** An X-Gateway-* switch: `true` or `false` (any case), sent at most once. */
function flag(request: FastifyRequest, name: string): boolean {
  const value = request.headers[name];
  if (value === undefined) return false;
  const text = typeof value === 'string' ? value.toLowerCase() : '';
  if (text !== 'true' && text !== 'false') throw invalidHeader(name, 'must be true or false, sent once.');
  return text === 'true';
}

/** What a surface decoded its request into (the chat surface's request is already in the stages' form). */
export interface DecodedRequest {
  surface: Surface;
  body: ChatRequest;
  stream: boolean;
  includeUsage: boolean;
  model: string;
  /** A client's own session header (Claude Code's x-claude-code-session-id), used when X-Gateway-Session-Id is absent and it is a valid label. */
  clientSessionHeader?: string;
  /** performance.now() when the route started its own work (a Responses chain's expansion), so the overhead counts it; default: now. */
  startedAt?: number;
}

/** A validated chat-completions request as the stages' call input. */
export function chatCompletionsInput(request: FastifyRequest): DecodedRequest {
  const body = request.body as ChatRequest;
  return { surface: CHAT_COMPLETIONS, body, stream: body.stream === true, includeUsage: clientWantsUsage(body), model: body.model };
}

/** A new call for a validated request; `openStream` writes the stream's head with the headers given then. */
export function newCall(
  request: FastifyRequest,
  reply: FastifyReply,
  tenant: TenantContext,
  clock: Clock,
  streamHeaders: (call: Call) => HeaderList,
  input: DecodedRequest = chatCompletionsInput(request),
): Call {
  const body = input.body;
  const sessionId = label(request, 'x-gateway-session-id') ?? clientLabel(request, input.clientSessionHeader);
  const tag = label(request, 'x-gateway-tag');
  const bypassCache = flag(request, 'x-gateway-no-cache');
  const noRoute = flag(request, 'x-gateway-no-route');
  const controller = new AbortController();
  const res = reply.raw;
  res.once('close', () => {
    if (res.writableFinished) return;
    if (call.onClientClose) call.onClientClose();
    else controller.abort();
  });
  const call: Call = {
    requestId: request.id,
    startedAt: input.startedAt ?? performance.now(),
    receivedAt: clock.now(),
    principal: request.principal,
    tenant,
    surface: input.surface,
    body,
    stream: input.stream,
    includeUsage: input.includeUsage,
    modelRequested: input.model,
    sessionId,
    tag,
    headers: request.headers,
    replyHeaders: [],
    noRoute,
    signal: controller.signal,
    // Bound, not a closure here: a flight keeps it (flight.stop), and a closure would keep this whole call with it.
    abort: controller.abort.bind(controller),
    onClientClose: undefined,
    log: request.log,
    response: res,
    openStream() {
      call.overheadMs = performance.now() - call.startedAt - call.upstreamMs;
      const headers = streamHeaders(call);
      call.streamOpened = true;
      reply.hijack();
      headers.push('content-type', 'text/event-stream; charset=utf-8', 'cache-control', 'no-cache', 'x-request-id', request.id);
      if (input.surface.name === 'messages') headers.push('request-id', request.id);
      res.writeHead(200, headers);
    },
    target: undefined,
    targets: [],
    routeReason: undefined,
    attempts: [],
    promptCache: undefined,
    noCache: bypassCache,
    cacheKey: undefined,
    cacheStatus: 'bypass',
    cacheAgeS: undefined,
    compaction: 'none',
    clientMessages: undefined,
    compactionOrigin: undefined,
    baseline: undefined,
    compactionSavedTokens: 0,
    tokensSaved: 0,
    saved: { cache: 0, compaction: 0, routing: 0, promptCache: 0 },
    providerCacheSaved: 0,
    ...unanswered(),
  };
  return call;
}

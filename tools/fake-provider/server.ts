import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { idMaker, type Reply } from './answer.ts';
import { countTokens, createMessage, modelList as anthropicModels } from './anthropic.ts';
import { ThinkingSigner } from './anthropic-agent.ts';
import { type Behaviour, Behaviours, withHeaders } from './behaviour.ts';
import { type Answer, errorAnswer, type Format, faultAnswer } from './faults.ts';
import { UsageLedger } from './ledger.ts';
import { DEFAULT_MACHINES, DEFAULT_TTL_MS, type PromptCacheOptions } from './prompt-cache.ts';
import { AnthropicPromptCache } from './prompt-cache-anthropic.ts';
import { OpenAiPromptCache } from './prompt-cache-openai.ts';
import { chatCompletion, modelList as openaiModels } from './openai.ts';
import { createResponse } from './responses.ts';
import { createEmbeddings } from './embeddings.ts';
import { sendStream } from './sse.ts';

/**
 * A fake LLM provider on a real port, speaking OpenAI chat completions
 * (POST /v1/chat/completions, GET /v1/models), responses (POST /v1/responses)
 * and embeddings (POST /v1/embeddings) and Anthropic Messages
 * (POST /v1/messages; GET /v1/models with an anthropic-version header lists
 * models Anthropic's way). Anything before `/v1/` in the path is ignored, so
 * a base URL such as http://127.0.0.1:PORT/openai/v1 works.
 *
 * Order for a model request: take the behaviour (scoped ones first, then
 * x-fake-* headers), wait latencyMs, play a status fault or hang, check the
 * request as the provider does (keys, required fields), then answer: echo
 * or tool call, whole or streamed, with the stream faults. See behaviour.ts.
 */

export interface FakeProviderOptions {
  /** 0 (default): a free port. */
  port?: number;
  host?: string;
  /** The server-wide behaviour to start from (and to return to on reset()). */
  behaviour?: Partial<Behaviour>;
  /** Ids listed by GET /v1/models. */
  models?: readonly string[];
  /** When set, the only key accepted (OpenAI bearer, Anthropic x-api-key); any non-empty key otherwise. */
  apiKey?: string;
  /** How many of the latest calls to keep for assertions (default 50; 0 keeps none: benchmarks). */
  record?: number;
  /** The prompt-cache simulation's TTL, machines and clock (it runs when behaviour.promptCache is on). */
  promptCache?: PromptCacheOptions;
}

export interface RecordedCall {
  method: string;
  /** The path as received, prefix and query included. */
  url: string;
  route: 'openai.chat' | 'openai.responses' | 'openai.embeddings' | 'anthropic.messages' | 'anthropic.count_tokens' | 'models' | 'unknown';
  headers: IncomingHttpHeaders;
  /** The parsed JSON body; the raw text when it was not JSON; undefined without a body. */
  body: unknown;
}

/** Every request received (count) and the latest ones (oldest first). */
export class CallLog {
  count = 0;
  /** Requests whose connection closed before the answer was complete (the client aborted, or a fault cut it). */
  aborted = 0;
  /** Bytes of floods (behaviour.flood) handed to sockets so far: how far a client's reading let a flood go. */
  floodBytes = 0;
  readonly #limit: number;
  #recent: RecordedCall[] = [];
  constructor(limit: number) {
    this.#limit = limit;
  }
  get recent(): readonly RecordedCall[] {
    return this.#recent;
  }
  last(): RecordedCall | undefined {
    return this.#recent.at(-1);
  }
  add(call: RecordedCall): void {
    if (this.#limit === 0) return;
    this.#recent.push(call);
    if (this.#recent.length > this.#limit) this.#recent.shift();
  }
  clear(): void {
    this.count = 0;
    this.aborted = 0;
    this.floodBytes = 0;
    this.#recent = [];
  }
}

export interface FakeProvider {
  /** http://host:port, without a trailing slash (append /v1). */
  url: string;
  port: number;
  calls: CallLog;
  /** The token counts of every answer, per model (kept whatever `record` says). */
  ledger: UsageLedger;
  /** Without `scope`, changes the server-wide behaviour; with `{requests: n}`, only the next n model requests. */
  setBehaviour(patch: Partial<Behaviour>, scope?: { requests: number }): void;
  /**
   * A behaviour for the requests of one API key (bearer or x-api-key) or of
   * one base path (what comes before `/v1/`, e.g. `/bad` for base URL
   * `http://host/bad/v1`), applied over the others: several tenants' upstreams
   * on one origin can then behave differently. `undefined` removes it.
   */
  setBehaviourFor(selector: BehaviourSelector, patch: Partial<Behaviour> | undefined): void;
  /** Back to the starting behaviour; call log, ledger and prompt caches emptied. */
  reset(): void;
  /** Stops listening and cuts every open connection (hung requests included). */
  close(): Promise<void>;
}

export type BehaviourSelector = { apiKey: string } | { path: string };

export const DEFAULT_MODELS = ['fake-model', 'fake-model-mini', 'claude-fake'];

const ROUTES: Record<string, { method: string; route: RecordedCall['route'] }> = {
  '/v1/chat/completions': { method: 'POST', route: 'openai.chat' },
  '/v1/responses': { method: 'POST', route: 'openai.responses' },
  '/v1/embeddings': { method: 'POST', route: 'openai.embeddings' },
  '/v1/messages': { method: 'POST', route: 'anthropic.messages' },
  '/v1/messages/count_tokens': { method: 'POST', route: 'anthropic.count_tokens' },
  '/v1/models': { method: 'GET', route: 'models' },
};

/** The handler of each model route. */
const HANDLERS = {
  'openai.chat': chatCompletion,
  'openai.responses': createResponse,
  'openai.embeddings': createEmbeddings,
  'anthropic.messages': createMessage,
  'anthropic.count_tokens': countTokens,
} as const;

/** The path before `/v1/` (`''` for none), without the query. */
function basePath(url: string): string {
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  const v1 = path.indexOf('/v1/');
  return v1 === -1 ? '' : path.slice(0, v1);
}

function requestKey(req: IncomingMessage): string | undefined {
  const auth = req.headers.authorization;
  const key = req.headers['x-api-key'] ?? (auth?.startsWith('Bearer ') ? auth.slice(7) : undefined);
  return typeof key === 'string' ? key : undefined;
}

/** The path from `/v1/` on, without the query. */
function routePath(url: string): string {
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  const v1 = path.indexOf('/v1/');
  return v1 === -1 ? path : path.slice(v1);
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on('data', (chunk: Buffer) => parts.push(chunk));
    req.on('end', () => resolve(parts.length === 1 ? parts[0]!.toString() : Buffer.concat(parts).toString()));
    req.on('error', reject);
  });
}

/** With `apiKey` set, the model list takes only that key (OpenAI bearer or Anthropic x-api-key), as the real lists need a valid one. */
function keyAccepted(req: IncomingMessage, apiKey: string | undefined): boolean {
  if (apiKey === undefined) return true;
  const auth = req.headers.authorization;
  const given = req.headers['x-api-key'] ?? (auth?.startsWith('Bearer ') ? auth.slice(7) : undefined);
  return given === apiKey;
}

const send = (res: ServerResponse, a: Answer) => {
  a.headers['content-length'] = String(Buffer.byteLength(a.body));
  res.writeHead(a.status, a.headers).end(a.body);
};

export async function createFakeProvider(options: FakeProviderOptions = {}): Promise<FakeProvider> {
  const behaviours = new Behaviours(options.behaviour ?? {});
  const byKey = new Map<string, Partial<Behaviour>>();
  const byPath = new Map<string, Partial<Behaviour>>();
  const calls = new CallLog(options.record ?? 50);
  const models = options.models ?? DEFAULT_MODELS;
  const id = idMaker();
  const ledger = new UsageLedger();
  const ttlMs = options.promptCache?.ttlMs ?? DEFAULT_TTL_MS;
  const now = options.promptCache?.now ?? Date.now;
  const caches = {
    openai: new OpenAiPromptCache(options.promptCache?.machines ?? DEFAULT_MACHINES, ttlMs, now),
    anthropic: new AnthropicPromptCache(ttlMs, now),
  };
  const bill = ledger.add.bind(ledger);
  const signer = new ThinkingSigner();

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    calls.count++;
    res.once('close', () => {
      if (!res.writableFinished) calls.aborted++;
    });
    const url = req.url ?? '/';
    const known = ROUTES[routePath(url)];
    const route = known && known.method === req.method ? known.route : 'unknown';
    const format: Format = route === 'anthropic.messages' || route === 'anthropic.count_tokens' || (route === 'models' && req.headers['anthropic-version'] !== undefined) ? 'anthropic' : 'openai';
    const requestId = id('req_');
    if (route === 'unknown' || route === 'models') {
      calls.add({ method: req.method ?? '', url, route, headers: req.headers, body: undefined });
      if (route === 'models' && !keyAccepted(req, options.apiKey)) send(res, errorAnswer(format, 'authentication', requestId));
      else if (route === 'models') send(res, { status: 200, headers: { 'content-type': 'application/json' }, body: format === 'anthropic' ? anthropicModels(models) : openaiModels(models) });
      else send(res, errorAnswer(format, 'not_found', requestId, `Invalid URL (${req.method} ${url})`));
      req.resume();
      return;
    }

    let taken = behaviours.take();
    const forPath = byPath.size > 0 ? byPath.get(basePath(url)) : undefined;
    if (forPath) taken = { ...taken, ...forPath };
    const key = byKey.size > 0 ? requestKey(req) : undefined;
    const forKey = key === undefined ? undefined : byKey.get(key);
    if (forKey) taken = { ...taken, ...forKey };
    const text = await readBody(req);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
    calls.add({ method: 'POST', url, route, headers: req.headers, body });
    let behaviour: Behaviour;
    try {
      behaviour = withHeaders(taken, req.headers);
    } catch (err) {
      send(res, errorAnswer(format, 'invalid_request', requestId, (err as Error).message));
      return;
    }
    if (behaviour.latencyMs > 0) await sleep(behaviour.latencyMs);
    if (behaviour.fault === 'hang') return; // never answered: close() or the client ends it
    if (body === null || typeof body !== 'object' || Array.isArray(body)) {
      send(res, errorAnswer(format, 'invalid_request', requestId, 'The request body is not valid JSON.'));
      return;
    }
    const fields = body as Record<string, unknown>;
    const fault = faultAnswer(format, behaviour, fields['stream'] === true, requestId);
    if (fault) {
      send(res, fault);
      return;
    }
    const simulate = behaviour.promptCache ? caches[format].simulate.bind(caches[format]) : undefined;
    const ctx = { behaviour, requestId, id, apiKey: options.apiKey, simulate, bill, signer };
    const handler = HANDLERS[route as keyof typeof HANDLERS];
    const reply: Reply = handler(fields, req.headers, ctx);
    if (reply.kind === 'stream') {
      res.writeHead(200, reply.headers);
      await sendStream(res, reply.plan, behaviour, (bytes) => {
        calls.floodBytes += bytes;
      });
      return;
    }
    const { answer } = reply;
    if (answer.status === 200 && behaviour.fault === 'garbage') {
      send(res, { ...answer, headers: { ...answer.headers }, body: answer.body.slice(0, answer.body.length >> 1) });
    } else if (answer.status === 200 && behaviour.fault === 'drop') {
      // Headers and half the body, then the connection is cut.
      res.writeHead(200, answer.headers);
      res.write(answer.body.slice(0, answer.body.length >> 1), () => res.socket?.destroy());
    } else {
      send(res, answer);
    }
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) send(res, errorAnswer('openai', 'server', 'req_error', `fake provider bug: ${String(err)}`));
      else res.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, options.host ?? '127.0.0.1', resolve));
  const { port, address } = server.address() as AddressInfo;
  const host = address.includes(':') ? `[${address}]` : address;

  return {
    url: `http://${host}:${port}`,
    port,
    calls,
    ledger,
    setBehaviour: (patch, scope) => behaviours.set(patch, scope),
    setBehaviourFor(selector, patch) {
      const [map, name] = 'apiKey' in selector ? [byKey, selector.apiKey] : [byPath, selector.path];
      if (patch === undefined) map.delete(name);
      else map.set(name, patch);
    },
    reset() {
      behaviours.reset();
      byKey.clear();
      byPath.clear();
      calls.clear();
      ledger.clear();
      caches.openai.clear();
      caches.anthropic.clear();
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      }),
  };
}

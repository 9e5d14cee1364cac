import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { startServer } from './children.ts';
import { startPortkey } from './portkey.ts';

/**
 * What the gateway benchmark sends OpenAI chat completions through, each
 * measured against the same fake provider in the same run. The first,
 * the provider called directly, is the baseline the others are judged by.
 */

/** A fake provider running as a child process. */
export interface Upstream {
  /** http://127.0.0.1:PORT (append /v1). */
  url: string;
  pid: number;
  /** The provider key every target forwards (the fake accepts any). */
  apiKey: string;
}

export interface RunningTarget {
  /** Base URL with /v1: requests go to `${url}/chat/completions`. */
  url: string;
  /** Headers of every request (authentication and routing included). */
  headers: Record<string, string>;
  /** The model name to send, when the target wants its own (e.g. provider/model); default "fake-model". */
  model?: string;
  /** The process whose CPU and memory are measured. */
  pid: number;
  stop(): Promise<void>;
  /** Anything the target reported that a reader should know (errors it logged), or undefined. */
  note?(): string | undefined;
  /** The live JS heap after a full GC, in bytes, where the target can tell (a growing one is a leak; RSS alone cannot tell). */
  heapAfterGc?(): Promise<number>;
}

export interface Target {
  name: string;
  start(upstream: Upstream): Promise<RunningTarget>;
}

/** What the fake provider answers every call of the gateway benchmark with (and bench/ab.ts's). */
export const FAKE_TEXT = 'Hello from the fake provider, friend.';

const JSON_TYPE = { 'content-type': 'application/json' };

export const DIRECT: Target = {
  name: 'direct',
  start: async (upstream) => ({
    url: `${upstream.url}/v1`,
    headers: { ...JSON_TYPE, authorization: `Bearer ${upstream.apiKey}` },
    pid: upstream.pid,
    stop: async () => {},
  }),
};

export const NODE_FLOOR: Target = {
  name: 'node floor',
  async start(upstream) {
    const server = await startServer<{ url: string }>('node-floor', new URL('../servers/node-floor.ts', import.meta.url), { UPSTREAM_URL: upstream.url });
    return { url: `${server.info.url}/v1`, headers: { ...JSON_TYPE, authorization: `Bearer ${upstream.apiKey}` }, pid: server.pid, stop: () => server.stop() };
  },
};

export const PORTKEY: Target = {
  name: 'Portkey',
  async start(upstream) {
    const portkey = await startPortkey();
    return {
      url: `${portkey.url}/v1`,
      headers: {
        ...JSON_TYPE,
        authorization: `Bearer ${upstream.apiKey}`,
        'x-portkey-provider': 'openai',
        'x-portkey-custom-host': `${upstream.url}/v1`,
      },
      pid: portkey.pid,
      stop: () => portkey.stop(),
      note() {
        const { count, first } = portkey.errors();
        return count ? `Portkey ${portkey.version} logged ${count} error lines, the first: "${first}"` : undefined;
      },
    };
  },
};

/**
 * The real gateway (bench/servers/gateway-server.ts) with one tenant whose
 * OpenAI key points at the fake; `env` adds to its environment (the
 * breakdown benchmark's BENCH_GATEWAY_SETTINGS, GATEWAY_USAGE_JOURNAL_DIR);
 * `checkout`: another checkout of this repository to run it from (bench/ab.ts).
 */
export async function startGateway(upstream: Upstream, name = 'gateway', env: Record<string, string> = {}, checkout?: string): Promise<RunningTarget> {
  const server = await startServer<{ url: string; apiKey: string; model: string }>(
    name,
    checkout === undefined ? new URL('../servers/gateway-server.ts', import.meta.url) : pathToFileURL(join(checkout, 'bench/servers/gateway-server.ts')),
    // --expose-gc lets the server answer the heap after a full GC; nothing calls gc() but that question.
    { UPSTREAM_URL: upstream.url, NODE_OPTIONS: '--expose-gc', ...env },
  );
  return {
    url: `${server.info.url}/v1`,
    // A session id: provider prompt caching and sticky routing work on every call.
    headers: { ...JSON_TYPE, authorization: `Bearer ${server.info.apiKey}`, 'x-gateway-session-id': 'bench-session' },
    model: server.info.model,
    pid: server.pid,
    stop: () => server.stop(),
    heapAfterGc: async () => (await server.ask<{ heapUsed: number }>('memory')).heapUsed,
  };
}

/** This gateway, every pipeline stage on (bench/servers/gateway-server.ts's default settings). */
export const GATEWAY: Target = { name: 'this gateway', start: (upstream) => startGateway(upstream) };

export const TARGETS: Target[] = [DIRECT, NODE_FLOOR, GATEWAY, PORTKEY];

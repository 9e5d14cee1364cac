import { request } from 'node:http';
import type OpenAI from 'openai';
import type { LiveGateway } from '../../helpers/gateway-service.ts';

/** Shared by the cache and dedup suites. */

export const MODEL = 'openai/gpt-4o-mini';

export async function until(check: () => boolean | Promise<boolean>, what: string, tries = 500): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Every chunk of a stream through the SDK, with the response headers. */
export async function streamed(
  client: OpenAI,
  body: OpenAI.Chat.ChatCompletionCreateParamsStreaming,
  headers: Record<string, string> = {},
): Promise<{ chunks: OpenAI.Chat.ChatCompletionChunk[]; headers: Headers }> {
  const { data, response } = await client.chat.completions.create(body, { headers }).withResponse();
  const chunks: OpenAI.Chat.ChatCompletionChunk[] = [];
  for await (const chunk of data) chunks.push(chunk);
  return { chunks, headers: response.headers };
}

/** The text of a stream's content deltas. */
export const textOf = (chunks: OpenAI.Chat.ChatCompletionChunk[]) => chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');

/** A raw POST to /v1/chat/completions with the body sent exactly as given. */
export async function rawPost(gw: LiveGateway, apiKey: string, body: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', ...headers },
    body,
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/**
 * A streamed request over node:http that goes away once it has received
 * `afterChunks` body chunks (the socket destroyed, as a client closing
 * its connection). Resolves with what it received.
 */
export function streamThenLeave(url: string, apiKey: string, body: string, afterChunks: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    });
    let got = '';
    let seen = 0;
    req.on('response', (res) => {
      res.on('data', (chunk: Buffer) => {
        got += chunk.toString();
        if (++seen >= afterChunks) {
          req.destroy();
          resolve(got);
        }
      });
      res.on('end', () => resolve(got));
    });
    req.on('error', (err) => (err.message.includes('socket hang up') || err.message.includes('aborted') ? resolve(got) : reject(err)));
    req.end(body);
  });
}

export { usageRecord } from '../../helpers/gateway-service.ts';

import { upstreamInvalid } from '../../openai-errors.ts';
import { isObject, parseObject } from '../json.ts';
import { upstreamHttpError } from '../upstream-errors.ts';
import type { ChatResult } from '../types.ts';
import { openAiErrorFields } from './errors.ts';
import { openAiUsage } from './usage.ts';

/**
 * A 2xx chat.completion from an OpenAI-compatible provider: sent to the
 * client byte for byte; only usage and model are read. A body that is not a
 * JSON object, or has no `choices`, is an upstream failure; some providers
 * (OpenRouter among them) answer an error with HTTP 200 and `{error: ...}`.
 */
export function chatResponse(provider: string, status: number, body: Buffer): ChatResult {
  const text = body.toString('utf8');
  const parsed = parseObject(text);
  if (parsed === undefined) throw upstreamInvalid(provider);
  if (!Array.isArray(parsed['choices'])) {
    const fields = openAiErrorFields(parsed);
    if (isObject(parsed['error']) && fields !== undefined) throw upstreamHttpError(provider, errorStatus(parsed['error'], status), fields, {});
    throw upstreamInvalid(provider);
  }
  const model = parsed['model'];
  return { body: text, usage: openAiUsage(parsed['usage']), model: typeof model === 'string' ? model : undefined };
}

/** The status an error inside a 2xx body stands for: its numeric `code` when it is an HTTP error status, else 502. */
export function errorStatus(error: Record<string, unknown>, fallback: number): number {
  const code = error['code'];
  if (typeof code === 'number' && Number.isInteger(code) && code >= 400 && code <= 599) return code;
  return fallback >= 400 ? fallback : 502;
}

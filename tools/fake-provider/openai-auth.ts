import type { IncomingHttpHeaders } from 'node:http';
import { type Answer, errorAnswer } from './faults.ts';

/**
 * The bearer-key check every OpenAI route makes first (chat completions,
 * responses, embeddings): no key is OpenAI's "You didn't provide an API key"
 * 401; with `apiKey` set, any other key is invalid_api_key. Undefined when
 * the key passes.
 */
export function openAiKeyRefusal(headers: IncomingHttpHeaders, apiKey: string | undefined, requestId: string): Answer | undefined {
  const auth = headers.authorization;
  if (typeof auth !== 'string' || !auth.startsWith('Bearer ') || auth.length === 7) {
    return errorAnswer(
      'openai',
      'authentication',
      requestId,
      "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
    );
  }
  if (apiKey !== undefined && auth.slice(7) !== apiKey) return errorAnswer('openai', 'authentication', requestId);
  return undefined;
}

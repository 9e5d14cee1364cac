import type { HttpProblem } from '../../platform/errors.ts';
import { openaiErrorBody } from '../../platform/error-format.ts';
import { sseEvent } from './sse.ts';

/** `{error: {message, type, code, param}}`, the OpenAI error body, as JSON (the platform's OpenAI error format). */
export function openAiErrorJson(problem: HttpProblem): string {
  return JSON.stringify(openaiErrorBody(problem));
}

/**
 * The event that ends a failed stream: `data: {"error": {...}}` and no
 * [DONE]. The OpenAI SDKs raise an APIError when a chunk carries `error`.
 */
export function errorEvent(problem: HttpProblem): string {
  return sseEvent(openAiErrorJson(problem));
}

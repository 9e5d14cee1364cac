import type { HttpProblem } from '../../../platform/errors.ts';
import { isObject, parseObject, stringField } from '../json.ts';
import { type UpstreamErrorFields, upstreamHttpError } from '../upstream-errors.ts';

/**
 * The fields of an OpenAI error body, `{error: {message, type, code, param}}`
 * (OpenAI API reference, "Error codes"); undefined when the body is not one.
 * Some compatible servers send `{error: "text"}` or `{message: ...}` alone.
 */
export function openAiErrorFields(body: Record<string, unknown> | undefined): UpstreamErrorFields | undefined {
  if (body === undefined) return undefined;
  const error = body['error'];
  if (typeof error === 'string') return { message: error, type: undefined, code: undefined, param: undefined };
  const source = isObject(error) ? error : body;
  const message = stringField(source, 'message');
  if (message === undefined) return undefined;
  return { message, type: stringField(source, 'type'), code: stringField(source, 'code'), param: stringField(source, 'param') };
}

/** An upstream non-2xx answer as the client's error (statuses mapped in upstream-errors.ts). */
export function upstreamError(
  provider: string,
  status: number,
  body: Buffer,
  headers: Record<string, string | string[] | undefined>,
): HttpProblem {
  return upstreamHttpError(provider, status, openAiErrorFields(parseObject(body.toString('utf8'))), headers);
}

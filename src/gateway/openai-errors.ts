import { HttpProblem } from '../platform/errors.ts';

/**
 * The data plane's errors, one factory each. The platform's OpenAI error
 * format sends them as `{error: {message, type, code, param}}` with the
 * status the OpenAI SDKs map to their error classes (400
 * BadRequestError, 401 AuthenticationError, 403 PermissionDeniedError,
 * 404 NotFoundError, 413, 429 RateLimitError, 5xx InternalServerError).
 * Messages never contain a key, ours or a provider's.
 */
export const invalidApiKey = () =>
  new HttpProblem(401, 'invalid_api_key', 'Incorrect API key provided. Send a gateway key as "Authorization: Bearer sk-gw-..." (or "x-api-key: sk-gw-...").', {
    type: 'invalid_request_error',
  });

export const missingApiKey = () =>
  new HttpProblem(
    401,
    'missing_api_key',
    'You did not provide an API key. Send a gateway key as "Authorization: Bearer sk-gw-..." (or "x-api-key: sk-gw-...").',
    { type: 'invalid_request_error' },
  );

export const sessionNotApiKey = () =>
  new HttpProblem(
    401,
    'invalid_api_key',
    'This is a console session token, not an API key. Create an sk-gw- key under /api/v1/tenant/api-keys and send that.',
    { type: 'invalid_request_error' },
  );

export const modelNotFound = (model: string) =>
  new HttpProblem(404, 'model_not_found', `The model "${model}" does not exist or is ambiguous; GET /v1/models lists the models you can use.`, {
    type: 'invalid_request_error',
    param: 'model',
  });

export const noProviderKey = (provider: string) =>
  new HttpProblem(
    400,
    'provider_key_missing',
    `No ${provider} key is stored for this tenant; add one under /api/v1/tenant/provider-keys.`,
    { type: 'invalid_request_error', param: 'model' },
  );

export const invalidBody = (param: string, message: string) =>
  new HttpProblem(400, 'invalid_request_body', message, { type: 'invalid_request_error', param });

export const invalidHeader = (header: string, message: string) =>
  new HttpProblem(400, 'invalid_header', `${header}: ${message}`, { type: 'invalid_request_error' });

export const upstreamUnreachable = (provider: string, cause: unknown) =>
  new HttpProblem(502, 'upstream_unreachable', `The ${provider} API could not be reached.`, { type: 'api_error', cause });

export const upstreamTimeout = (provider: string, cause: unknown) =>
  new HttpProblem(504, 'upstream_timeout', `The ${provider} API did not answer in time.`, { type: 'api_error', cause });

export const upstreamInvalid = (provider: string, cause?: unknown) =>
  new HttpProblem(502, 'upstream_invalid_response', `The ${provider} API sent an answer that could not be understood.`, {
    type: 'api_error',
    cause,
  });

/** GATEWAY_TENANT_CONCURRENCY reached (pipeline/stages/concurrency.ts): refused at once, before any work. */
export const concurrencyLimited = (limit: number) =>
  new HttpProblem(
    429,
    'concurrency_limited',
    `Too many calls in progress: this workspace may have ${limit} calls in progress at once on one gateway replica. Wait for one to finish, then retry.`,
    { type: 'requests', headers: { 'retry-after': '1' } },
  );

/**
 * GATEWAY_UPSTREAM_CONNECTIONS_PER_TENANT: the tenant's own calls held every
 * connection of its share to this provider origin for as long as a call
 * may wait for the provider's first byte (data-plane/upstream-shares.ts).
 */
export const upstreamConcurrencyLimited = (provider: string, perTenant: number) =>
  new HttpProblem(
    429,
    'upstream_concurrency_limited',
    `This workspace's ${perTenant} connections to the ${provider} API stayed busy with its other calls for as long as a call may wait; retry when some of them have finished.`,
    { type: 'requests', headers: { 'retry-after': '1' } },
  );

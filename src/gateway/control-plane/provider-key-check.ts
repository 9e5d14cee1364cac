import type { Readable } from 'node:stream';
import { HttpProblem } from '../../platform/errors.ts';
import type { GatewayDeps } from '../deps.ts';
import { upstreamInvalid, upstreamTimeout, upstreamUnreachable } from '../openai-errors.ts';
import { loadProviderKeys, takeProviderKeyPoint } from './provider-keys.ts';
import { adapterFor } from '../providers/adapters.ts';
import { findProvider } from '../providers/registry.ts';

/** The whole check, connection included, ends by then: a person is waiting on the page. */
export const KEY_CHECK_TIMEOUT_MS = 10_000;
/** A model list is small; a larger answer is read no further (its first part is enough to count). */
const MAX_BODY_BYTES = 1024 * 1024;
const ERROR_BODY_BYTES = 64 * 1024;

export type KeyCheck =
  | { ok: true; provider: string; models: number | undefined; ms: number }
  | { ok: false; provider: string; status: number; code: string; message: string; ms: number };

/**
 * The console's "test" button: one authenticated call with the tenant's
 * stored key for `providerId`, the provider's model list (GET {base}/models).
 * Listing models needs a valid key, costs no tokens and names no model the
 * key might not be allowed to use, where a 1-token completion would cost
 * money and need a model chosen for the tenant. It goes through the data
 * plane's own parts: the stored key opened as the data plane opens it
 * (loadProviderKeys), the request built by the provider's adapter, sent
 * through the upstream pools (SSRF-safe connector, so a base_url pointing
 * somewhere it may not is refused as on a real call), its refusal mapped by
 * the adapter exactly as a call's would be. Never throws for what the
 * provider or the network did: that is the answer shown; a key not stored
 * is a 404.
 */
export async function checkProviderKey(
  deps: Pick<GatewayDeps, 'db' | 'config' | 'upstream' | 'limiters' | 'metrics'>,
  tenantId: string,
  providerId: string,
): Promise<KeyCheck> {
  const provider = findProvider(providerId);
  const notStored = () => new HttpProblem(404, 'provider_key_not_found', `No ${provider?.name ?? 'such'} key is stored for this workspace.`);
  if (!provider) throw notStored();
  await takeProviderKeyPoint(deps, tenantId);
  const keys = await loadProviderKeys(deps.db, [deps.config.encryptionKey, ...deps.config.previousEncryptionKeys], tenantId);
  const credentials = keys.get(provider.id);
  if (!credentials) throw notStored();
  const adapter = adapterFor(provider, { anthropicDefaultMaxTokens: deps.config.anthropicDefaultMaxTokens });
  const baseUrl = new URL(credentials.baseUrl);
  const probe = adapter.modelsRequest({ apiKey: credentials.apiKey, baseUrl });
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const failed = (problem: HttpProblem): KeyCheck => ({ ok: false, provider: provider.id, status: problem.status, code: problem.code, message: problem.message, ms: elapsed() });
  const signal = AbortSignal.timeout(KEY_CHECK_TIMEOUT_MS);
  try {
    const response = await deps.upstream.get(baseUrl, tenantId).request({
      method: 'GET',
      path: probe.path,
      headers: { ...probe.headers, accept: 'application/json' },
      signal,
      headersTimeout: KEY_CHECK_TIMEOUT_MS,
      bodyTimeout: KEY_CHECK_TIMEOUT_MS,
    });
    if (response.statusCode < 200 || response.statusCode >= 300) {
      const body = await readUpTo(response.body, ERROR_BODY_BYTES);
      return failed(adapter.upstreamError(response.statusCode, body, response.headers));
    }
    const body = await readUpTo(response.body, MAX_BODY_BYTES);
    return { ok: true, provider: provider.id, models: countModels(body), ms: elapsed() };
  } catch (err) {
    return failed(transportProblem(provider.name, err, signal));
  }
}

/** OpenAI's and Anthropic's lists are both `{data: [...]}`; another shape still proves the key was accepted. */
function countModels(body: Buffer): number | undefined {
  try {
    const data = (JSON.parse(body.toString('utf8')) as { data?: unknown }).data;
    return Array.isArray(data) ? data.length : undefined;
  } catch {
    return undefined;
  }
}

const TIMEOUTS = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/** A connection or read that failed, as the data plane names it (the same factories, the same codes). */
function transportProblem(provider: string, err: unknown, signal: AbortSignal): HttpProblem {
  if (err instanceof HttpProblem) return err;
  const code = (err as { code?: unknown } | null)?.code;
  // A forbidden address is "could not be reached", as an unresolvable name is (the data plane's transportError): one answer for both.
  if (signal.aborted || (typeof code === 'string' && TIMEOUTS.has(code))) return upstreamTimeout(provider, err);
  if (err instanceof SyntaxError) return upstreamInvalid(provider, err);
  return upstreamUnreachable(provider, err);
}

/** The body up to `limit` bytes; the rest is discarded and the stream destroyed. */
async function readUpTo(body: Readable, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const buf = chunk as Buffer;
    chunks.push(size + buf.length > limit ? buf.subarray(0, limit - size) : buf);
    size += buf.length;
    if (size >= limit) {
      body.destroy();
      break;
    }
  }
  return Buffer.concat(chunks);
}

import { HttpProblem } from '../../../platform/errors.ts';
import { collectResponse } from '../../data-plane/collect-response.ts';
import type { TenantContext } from '../../data-plane/tenant-context.ts';
import type { UpstreamPools } from '../../data-plane/upstream-pools.ts';
import { upstreamInvalid, upstreamTimeout, upstreamUnreachable } from '../../openai-errors.ts';
import { upstreamError } from '../../providers/anthropic/errors.ts';
import { ANTHROPIC_VERSION } from '../../providers/anthropic/request.ts';
import { type JsonObject, parseObject } from '../../providers/json.ts';
import { joinPath } from '../../providers/upstream-path.ts';
import { ModelAliases } from '../../routing/model-aliases.ts';
import { countPromptTokens } from '../../tokens.ts';
import type { ClientMessages } from './passthrough.ts';
import { decodeMessages } from './to-chat.ts';

/** What POST /v1/messages/count_tokens answers: Anthropic's count, or the gateway's own estimate. */
export interface TokenCount {
  inputTokens: number;
  /** `anthropic`: the tenant's Anthropic provider counted; `estimate`: the gateway counted (o200k), no Anthropic key or model. */
  countedBy: 'anthropic' | 'estimate';
}

export type CountTokens = (tenant: TenantContext, client: ClientMessages, signal: AbortSignal) => Promise<TokenCount>;

/** An Anthropic model name: `claude-*`, or any model as `anthropic/...`. */
const ANTHROPIC_MODEL = /^(?:anthropic\/|claude-)/;

/** Anthropic's count answers are a few dozen bytes. */
const MAX_COUNT_BYTES = 64 * 1024;

/**
 * count_tokens (Messages API, "Count tokens in a message"), which Claude
 * Code calls to size its context: for an Anthropic model, with the tenant's
 * Anthropic key, Anthropic counts (free, exact: its tokenizer is not
 * public); the client's body goes as it came, model aside. Otherwise (no
 * Anthropic key, or a model of another provider) the gateway counts the
 * request as it would send it to a Chat Completions provider, with the
 * o200k tokenizer, and says so (X-Gateway-Token-Count: estimate).
 */
export function countTokensVia(options: { pools: UpstreamPools; firstByteTimeoutMs: number; idleTimeoutMs: number }): CountTokens {
  return async function countTokens(tenant, client, signal) {
    const named = typeof client.body['model'] === 'string' ? client.body['model'] : '';
    // The tenant's alias decides where the call would go, so whose count it is.
    const model = new ModelAliases(tenant.settings.models).match(named)?.target ?? named;
    const key = tenant.providerKeys.get('anthropic');
    if (key === undefined || !ANTHROPIC_MODEL.test(model)) {
      const { chat } = decodeMessages(client.body, { reasoning: false, maxTokensField: 'max_tokens' });
      return { inputTokens: countPromptTokens(chat.messages, chat['tools']), countedBy: 'estimate' };
    }
    const upstreamModel = model.startsWith('anthropic/') ? model.slice('anthropic/'.length) : model;
    const body: JsonObject = upstreamModel === named ? client.body : { ...client.body, model: upstreamModel };
    const headers: Record<string, string> = { 'x-api-key': key.apiKey, 'anthropic-version': client.version ?? ANTHROPIC_VERSION, 'content-type': 'application/json' };
    if (client.beta !== undefined) headers['anthropic-beta'] = client.beta;
    let answer: Awaited<ReturnType<typeof collectResponse>>;
    try {
      answer = await collectResponse(options.pools.get(key.baseUrl, tenant.tenantId), {
        path: joinPath(key.baseUrl, '/messages/count_tokens'),
        headers,
        body: JSON.stringify(body),
        signal,
        headersTimeout: options.firstByteTimeoutMs,
        bodyTimeout: options.idleTimeoutMs,
        maxBytes: MAX_COUNT_BYTES,
        errorBytes: MAX_COUNT_BYTES,
        tooLarge: () => upstreamInvalid('Anthropic'),
      });
    } catch (err) {
      if (err instanceof HttpProblem) throw err;
      const code = (err as { code?: unknown } | null)?.code;
      if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT') throw upstreamTimeout('Anthropic', err);
      throw upstreamUnreachable('Anthropic', err);
    }
    if (answer.statusCode < 200 || answer.statusCode >= 300) throw upstreamError('Anthropic', answer.statusCode, answer.body, answer.headers);
    const count = parseObject(answer.body.toString('utf8'))?.['input_tokens'];
    if (typeof count !== 'number' || !Number.isInteger(count) || count < 0) throw upstreamInvalid('Anthropic');
    return { inputTokens: count, countedBy: 'anthropic' };
  };
}

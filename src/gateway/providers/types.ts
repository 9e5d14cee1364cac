import type { HttpProblem } from '../../platform/errors.ts';

/**
 * The one interface every wire format implements (one folder per format:
 * openai-compatible/, anthropic/). The pipeline speaks OpenAI's chat
 * completions to clients; an adapter turns that into its provider's request
 * and the provider's answer back into OpenAI's shape. Adapters do no I/O:
 * the upstream call (undici Pool, timeouts, aborts) belongs to the pipeline,
 * so each adapter is pure and tested on bytes.
 */

/** An OpenAI chat-completions request body as the client sent it (validated loosely; unknown fields kept). */
export type ChatRequest = Record<string, unknown> & {
  model: string;
  messages: unknown[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean } & Record<string, unknown>;
};

/** Token counts of one call, normalised across providers. */
export interface TokenUsage {
  /** Every input token, cached ones included (OpenAI `prompt_tokens`; Anthropic input + cache read + cache write). */
  promptTokens: number;
  /** Input tokens read from the provider's prompt cache (OpenAI `prompt_tokens_details.cached_tokens`, Anthropic `cache_read_input_tokens`). */
  cachedTokens: number;
  /** Input tokens written to the provider's prompt cache (Anthropic `cache_creation_input_tokens`; 0 for OpenAI). */
  cacheWriteTokens: number;
  /** Every output token, reasoning included (OpenAI `completion_tokens`, Anthropic `output_tokens`). */
  completionTokens: number;
  /** Of completionTokens, those spent reasoning (OpenAI `completion_tokens_details.reasoning_tokens`). */
  reasoningTokens: number;
  /** The provider reported a count that was not a whole number from 0 to MAX_TOKEN_COUNT; it was clamped (usage-counts.ts). */
  clamped?: boolean;
  /** The provider's final usage never arrived (a stream cut short): the counts are the gateway's (ChatStream.settleUnfinished). */
  estimated?: boolean;
}

export interface CallContext {
  /** The provider's own model id (the part after `provider/`). */
  model: string;
  /** The tenant's provider key, in plaintext, for this call only. */
  apiKey: string;
  /** The upstream base URL: the tenant's base_url or the registry's default, without a trailing slash (e.g. https://api.openai.com/v1). */
  baseUrl: URL;
  /** The gateway's request id (`chatcmpl-` ids of translated answers derive from it). */
  requestId: string;
  /** Unix seconds for `created`. */
  created: number;
  /** The provider prompt-cache hints for this attempt (the prompt-cache stage's plan); undefined: none. */
  promptCache?: PromptCachePlan | undefined;
}

/**
 * Where a request's stable prefix ends, for providers' prompt caches. Decided
 * once per call on the OpenAI-shaped request; each adapter applies it in its
 * own wire format on every attempt (a fallback to another provider included).
 */
export interface PromptCachePlan {
  /** Anthropic `cache_control` breakpoints (at most four in all): after the tool definitions, after the system prompt, after these indexes of `messages`. */
  breakpoints: { tools: boolean; system: boolean; messages: number[] };
  /** OpenAI's `prompt_cache_key`, sent when the client set none (providers that take it). */
  key: string | undefined;
}

/** What the pipeline sends upstream: always a POST with a JSON body to `baseUrl`'s origin. */
export interface UpstreamRequest {
  /** Absolute path on the upstream origin, the base URL's path included (e.g. /v1/chat/completions). */
  path: string;
  /** Headers to send, authentication included (content-type is set here too). */
  headers: Record<string, string>;
  body: string;
}

/** A complete (non-streamed) answer, translated. */
export interface ChatResult {
  /** The `chat.completion` JSON to send the client. Passed through unchanged when the provider speaks OpenAI already. */
  body: string;
  /** Undefined when the provider reported none. */
  usage: TokenUsage | undefined;
  /** The model that answered, as the provider names it (without `provider/`). */
  model: string | undefined;
}

/**
 * One streamed answer being translated, fed upstream bytes as they arrive.
 * Each method returns the bytes to write to the client next (possibly "").
 * Output is OpenAI SSE: `data: {chat.completion.chunk}\n\n` events, ending
 * with `data: [DONE]\n\n` on success. A provider error met mid-stream ends
 * the output with one `data: {"error": {...}}` event in the OpenAI shape and
 * no [DONE] (the OpenAI SDKs raise it), never a clean finish.
 */
export interface ChatStream {
  push(chunk: Buffer): string;
  /** The upstream body ended. If it ended early (no terminal event), this returns an error event, as fail() does. */
  end(): string;
  /** The upstream connection failed mid-way (reset, idle timeout): returns the error event for `error`. */
  fail(error: HttpProblem): string;
  /** Usage as reported so far (final after end()). */
  readonly usage: TokenUsage | undefined;
  /**
   * Called once the relay is over. When the provider's final usage did not
   * arrive (the client left, the upstream cut the stream or failed, or it
   * never reports usage), `usage` becomes what was generated so far: the
   * provider's prompt count if it sent one (Anthropic's message_start), else
   * `promptTokens()` (the gateway's estimate), and the completion tokens
   * counted from the deltas parsed (text, tool-call arguments, reasoning),
   * marked `estimated`. Does nothing when the final usage arrived.
   */
  settleUnfinished(promptTokens: () => number): void;
  readonly model: string | undefined;
  /** Set once an error ended the stream (the provider's, mapped, or the one given to fail()). */
  readonly error: HttpProblem | undefined;
}

export interface StreamOptions {
  /** The client asked for `stream_options.include_usage`: emit the usage chunk (before [DONE], empty `choices`). */
  includeUsage: boolean;
  /** USD cost of a usage, put in the usage chunk as `usage.cost` (as OpenRouter does); undefined: no cost field. */
  cost: (usage: TokenUsage) => number | undefined;
}

/** A GET the gateway sends on its own behalf (no client body): the path on the base URL's origin and the headers, authentication included. */
export interface UpstreamProbe {
  path: string;
  headers: Record<string, string>;
}

export interface ProviderAdapter {
  /**
   * The provider's model list (GET {base}/models): the cheapest call that
   * needs a valid key and costs no tokens, used to test a stored key
   * (provider-key-check.ts).
   */
  modelsRequest(ctx: Pick<CallContext, 'apiKey' | 'baseUrl'>): UpstreamProbe;
  /** The upstream request for a chat request. For streams, asks the provider for usage even when the client did not (needed for cost). */
  chatRequest(request: ChatRequest, ctx: CallContext): UpstreamRequest;
  /** Translates a 2xx non-streamed upstream body; throws HttpProblem (502 `upstream_invalid_response`) on garbage. */
  chatResponse(status: number, body: Buffer, ctx: CallContext): ChatResult;
  /** A translator for one streamed 2xx answer. */
  chatStream(ctx: CallContext, options: StreamOptions): ChatStream;
  /**
   * An upstream non-2xx answer as the error to send the client, in the
   * OpenAI shape: the provider's message kept (it never contains the key),
   * the status the OpenAI SDKs expect (401 stays 401, 429 keeps Retry-After,
   * 529 overloaded becomes 503, other 5xx become 502).
   */
  upstreamError(status: number, body: Buffer, headers: Record<string, string | string[] | undefined>): HttpProblem;
}

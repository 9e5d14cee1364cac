import type { HttpProblem } from '../../../platform/errors.ts';
import { anthropicErrorBody } from '../../../platform/error-format.ts';
import { upstreamInvalid } from '../../openai-errors.ts';
import { embeddedError } from '../../providers/anthropic/errors.ts';
import { ANTHROPIC_VERSION } from '../../providers/anthropic/request.ts';
import { anthropicUsage } from '../../providers/anthropic/usage.ts';
import { isObject, type JsonObject, parseObject } from '../../providers/json.ts';
import { RelayedStream } from '../../providers/relayed-stream.ts';
import { sseEvent } from '../../providers/sse.ts';
import type { ChatResult, ProviderAdapter } from '../../providers/types.ts';
import { joinPath } from '../../providers/upstream-path.ts';

/** The client's Messages request as it came: the body and the headers that belong to Anthropic. */
export interface ClientMessages {
  /** The parsed body, in the client's key order, unknown fields included. */
  readonly body: JsonObject;
  /** `anthropic-version` as the client sent it (undefined: the gateway's). */
  readonly version: string | undefined;
  /** `anthropic-beta` as the client sent it, several headers joined with commas. */
  readonly beta: string | undefined;
}

/**
 * Messages to an Anthropic upstream: the client's own request, untouched.
 * The body is the client's with only `model` set to the target's id (in its
 * place, so the keys keep their order); every other field, known to the
 * gateway or not, goes as the client wrote it (thinking blocks and their
 * signatures, cache_control and its TTLs, server tools, context_management,
 * output_config, betas). `anthropic-version` and `anthropic-beta` are the
 * client's. The answer is Anthropic's own: a complete message relayed as
 * its bytes (read only for its usage and model), a stream relayed event by
 * event (MessagesRelay), an error rendered by the surface in Anthropic's
 * shape with the provider's message.
 */
export function passthroughAdapter(provider: string, client: ClientMessages, base: ProviderAdapter): ProviderAdapter {
  // One serialization per model: a retry or a fallback inside Anthropic to the same model sends the same bytes.
  let sent: { model: string; text: string } | undefined;
  const bodyFor = (model: string): string => {
    if (sent?.model !== model) {
      const body = client.body['model'] === model ? client.body : { ...client.body, model };
      sent = { model, text: JSON.stringify(body) };
    }
    return sent.text;
  };
  return {
    modelsRequest: (ctx) => base.modelsRequest(ctx),
    chatRequest(_stagesForm, ctx) {
      const headers: Record<string, string> = {
        'x-api-key': ctx.apiKey,
        'anthropic-version': client.version ?? ANTHROPIC_VERSION,
        'content-type': 'application/json',
      };
      if (client.beta !== undefined) headers['anthropic-beta'] = client.beta;
      return { path: joinPath(ctx.baseUrl, '/messages'), headers, body: bodyFor(ctx.model) };
    },
    chatResponse(_status, body): ChatResult {
      const text = body.toString('utf8');
      const parsed = parseObject(text);
      if (parsed === undefined || parsed['type'] !== 'message') throw upstreamInvalid(provider);
      const model = parsed['model'];
      return { body: text, usage: anthropicUsage(parsed['usage']), model: typeof model === 'string' ? model : undefined };
    },
    chatStream: () => new MessagesRelay(provider),
    upstreamError: (status, body, headers) => base.upstreamError(status, body, headers),
  };
}

/** A failed stream's last event in Anthropic's shape (Streaming reference, "Error events"). */
export function anthropicErrorEvent(problem: HttpProblem): string {
  return sseEvent(JSON.stringify(anthropicErrorBody(problem)), 'error');
}

/**
 * An Anthropic stream relayed event by event, as it came: each event's name
 * and data written again as they were (message_start, content blocks and
 * their deltas of every kind, thinking and signature deltas included,
 * message_delta, message_stop, ping, and event types that do not exist yet),
 * comments and blank keep-alives dropped. Read for usage (message_start's
 * input counts, message_delta's cumulative output and, on newer models,
 * final input counts) and the model. An upstream `error` event is relayed as
 * it came and ends the stream; a failure of the gateway's own (the upstream
 * cut off, an event too large) ends it with an `error` event in the same
 * shape.
 */
export class MessagesRelay extends RelayedStream {
  #rawUsage: JsonObject = {};
  #started = false;

  protected readonly onEvent = (event: string, data: string): void => {
    if (this.finished) return;
    const parsed = parseObject(data);
    const type = parsed?.['type'];
    if (parsed === undefined || typeof type !== 'string') {
      this.stop(upstreamInvalid(this.provider));
      return;
    }
    if (type === 'error') {
      this.stop(embeddedError(this.provider, parsed), sseEvent(data, event));
      return;
    }
    this.out += sseEvent(data, event === 'message' ? undefined : event);
    if (type === 'message_start') {
      const message = parsed['message'];
      if (isObject(message)) {
        this.#started = true;
        if (typeof message['model'] === 'string') this.reportedModel = message['model'];
        this.#mergeUsage(message['usage']);
      }
    } else if (type === 'content_block_delta') {
      const delta = parsed['delta'];
      if (isObject(delta)) this.generated(delta['text'] ?? delta['partial_json'] ?? delta['thinking']);
    } else if (type === 'message_delta') {
      this.#mergeUsage(parsed['usage']);
    } else if (type === 'message_stop') {
      if (!this.#started) {
        this.stop(upstreamInvalid(this.provider));
        return;
      }
      this.finished = true;
      this.usageFinal = this.reportedUsage !== undefined;
    }
  };

  #mergeUsage(usage: unknown): void {
    if (!isObject(usage)) return;
    for (const key of ['input_tokens', 'output_tokens', 'cache_read_input_tokens', 'cache_creation_input_tokens']) {
      const value = usage[key];
      if (value !== undefined && value !== null) this.#rawUsage[key] = value;
    }
    this.reportedUsage = anthropicUsage(this.#rawUsage);
  }

  protected override errorText(error: HttpProblem): string {
    return anthropicErrorEvent(error);
  }
}

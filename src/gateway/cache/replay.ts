import { catalogEntry } from '../catalog/catalog.ts';
import type { Call } from '../pipeline/call.ts';
import { findProvider } from '../providers/registry.ts';
import type { CachedAnswer } from './cached-answer.ts';

/** A complete answer in either shape (a cache entry, or what an in-flight call produced). */
export type AnswerBody = Pick<CachedAnswer, 'completion' | 'chunks' | 'usageChunk'>;

/**
 * Sends a complete answer to a client in the shape it asked for, in its
 * surface's format (call.surface.answers): the complete answer, or a
 * well-formed SSE stream (the chunks one by one, the usage chunk when the
 * client asked for it with the cost as charged, then the terminal event).
 * `usageCost` is what the client pays (0 for a reused answer; undefined
 * when the model has no price: no cost field).
 */
export function sendAnswer(call: Call, answer: AnswerBody, usageCost: number | undefined): void {
  const format = call.surface.answers;
  if (!call.stream) {
    call.result = answer.completion ?? format.join(answer.chunks ?? [], answer.usageChunk);
    if (call.tenant.storeBodies) call.storedResponse = call.result;
    return;
  }
  const { chunks, usageChunk } = answer.chunks ? { chunks: answer.chunks, usageChunk: answer.usageChunk } : format.cut(answer.completion ?? '{}');
  let text = '';
  for (const chunk of chunks) text += format.chunkEvent(chunk);
  if (call.includeUsage && usageChunk !== undefined) {
    call.usageChunkSent = format.withCost(usageChunk, usageCost);
    text += format.chunkEvent(call.usageChunkSent);
  }
  text += format.done;
  if (call.tenant.storeBodies) call.storedResponse = text;
  call.openStream();
  if (!call.response.destroyed) call.response.end(text);
}

/**
 * A call answered by reusing another's answer (a cache hit, or a dedup
 * follower): nothing billed (cost 0, token columns 0), the reused answer's
 * tokens and cost recorded as saved, and the model that produced it named.
 */
export function chargeReuse(call: Call, produced: { provider: string; model: string | undefined; usage: CachedAnswer['usage']; costUsd: number | undefined }): void {
  call.usage = undefined;
  call.costUsd = 0;
  call.tokensSaved += produced.usage ? produced.usage.promptTokens + produced.usage.completionTokens : 0;
  call.saved.cache = produced.costUsd ?? 0;
  // Nothing was sent to the provider for this call: its cache saved nothing on it.
  call.providerCacheSaved = 0;
  nameProducer(call, produced.provider, produced.model);
}

/**
 * Points `call.target` at the provider that produced a reused answer (a
 * fallback may have answered the original call), so that X-Gateway-Model
 * and the usage record name it.
 */
export function nameProducer(call: Call, providerId: string, model: string | undefined): void {
  const target = call.target;
  if (model !== undefined) call.modelUsed = model;
  if (!target || target.provider.id === providerId) return;
  const provider = findProvider(providerId);
  if (!provider) return;
  const routed = call.targets.find((t) => t.provider.id === providerId);
  const named = model ?? target.model;
  call.target = routed ?? { ...target, provider, model: named, ref: `${provider.id}/${named}`, entry: catalogEntry(providerId, named) };
}

import { HttpProblem } from '../../../platform/errors.ts';
import { MAX_CALL_USD } from '../../catalog/cost.ts';
import type { UsageWriter } from '../../usage/usage-writer.ts';
import type { GatewayMetrics } from '../../metrics.ts';
import type { TokenUsage } from '../../providers/types.ts';
import type { UsageRecordRow } from '../../schema.ts';
import { type Call, type Stage, totalSaved } from '../call.ts';
import { storedBodies } from '../stored-bodies.ts';

/**
 * The outermost stage: whatever happens inside, the call leaves one usage
 * record (queued for the batched writer, never awaited on the hot path) and
 * its metrics. A failed call records the status and code it was answered
 * with.
 */
export function usageStage(writer: UsageWriter, metrics: GatewayMetrics): Stage {
  return async function recordUsage(call, next) {
    try {
      await next();
    } catch (err) {
      call.status = err instanceof HttpProblem ? err.status : 500;
      call.errorCode = err instanceof HttpProblem ? err.code : 'internal_error';
      throw err;
    } finally {
      call.overheadMs ??= performance.now() - call.startedAt - call.upstreamMs;
      // A stream has answered already: its record goes to the journal at once. Other answers wait for theirs (durable()).
      writer.record(usageRow(call), call.streamOpened);
      metrics.observeCall(call);
    }
  };
}

function usageRow(call: Call): UsageRecordRow {
  const usage = call.usage;
  const target = call.target;
  const bodies = storedBodies(call);
  return {
    request_id: call.requestId,
    tenant_id: call.principal.tenantId,
    key_id: call.principal.keyId,
    session_id: call.sessionId ?? null,
    tag: call.tag ?? null,
    model_requested: call.modelRequested,
    model_used: target ? `${target.provider.id}/${call.modelUsed ?? target.model}` : null,
    provider: target?.provider.id ?? null,
    status: call.status,
    error_code: call.errorCode ?? null,
    stream: call.stream ? 1 : 0,
    prompt_tokens: usage?.promptTokens ?? 0,
    cached_tokens: usage?.cachedTokens ?? 0,
    cache_write_tokens: usage?.cacheWriteTokens ?? 0,
    completion_tokens: usage?.completionTokens ?? 0,
    reasoning_tokens: usage?.reasoningTokens ?? 0,
    saved_tokens: call.tokensSaved,
    cost_usd: call.costUsd ?? 0,
    cost_saved_usd: totalSaved(call),
    saved_cache_usd: call.saved.cache,
    saved_compaction_usd: call.saved.compaction,
    saved_routing_usd: call.saved.routing,
    saved_prompt_cache_usd: call.saved.promptCache,
    // The provider's, not the gateway's: beside cost_saved_usd, never in it.
    saved_provider_cache_usd: call.providerCacheSaved,
    compaction_saved_tokens: call.compactionSavedTokens,
    route_reason: call.routeReason ?? null,
    attempts: call.attempts.length > 1 ? JSON.stringify(call.attempts) : null,
    cache_status: call.cacheStatus,
    compaction: call.compaction,
    overhead_ms: round2(call.overheadMs ?? 0),
    upstream_ms: round2(call.upstreamMs),
    created_at: call.receivedAt,
    request_body: bodies.request_body,
    response_body: bodies.response_body,
    usage_flags: withSurfaceFlags(usage === undefined ? null : usageFlags(usage, call.costUsd), call.surface.flags?.()),
    body_storage: bodies.body_storage,
    surface: call.surface.name,
  };
}

/** Why the counts are not the provider's own (schema.ts), or null; a cost at the guard's bound (catalog/cost.ts) was clamped too. */
export function usageFlags(usage: TokenUsage, cost: number | undefined): string | null {
  const clamped = usage.clamped === true || (cost !== undefined && cost >= MAX_CALL_USD);
  if (usage.estimated) return clamped ? 'clamped,estimated' : 'estimated';
  return clamped ? 'clamped' : null;
}

function withSurfaceFlags(flags: string | null, surface: string | undefined): string | null {
  if (surface === undefined) return flags;
  return flags === null ? surface : `${flags},${surface}`;
}

const round2 = (ms: number) => Math.round(ms * 100) / 100;

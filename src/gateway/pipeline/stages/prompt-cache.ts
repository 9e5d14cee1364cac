import { anthropicMinimum } from '../../prompt-cache/minimum.ts';
import { promptCacheKey } from '../../prompt-cache/cache-key.ts';
import { promptCacheWanted } from '../../prompt-cache/mode.ts';
import { planPromptCache } from '../../prompt-cache/plan.ts';
import type { TenantContext } from '../../data-plane/tenant-context.ts';
import type { Call, CallTarget, Stage } from '../call.ts';

/** Sessions whose prompt_cache_key a tenant context keeps at most. */
const MAX_KEPT_KEYS = 10_000;

/**
 * Provider prompt caching: the gateway marks where a request's stable
 * prefix ends so the provider caches it, and counts what that saved.
 * 1. Whether: X-Gateway-Prompt-Cache (on, off), else the tenant's
 *    prompt_cache.enabled for calls with X-Gateway-Session-Id (mode.ts), or
 *    a session the surface knows (Surface.promptCacheSession).
 * 2. The plan, decided once on the OpenAI-shaped request (prompt-cache/plan.ts):
 *    Anthropic breakpoints, only when a target speaks Anthropic's format and
 *    only on prefixes that reach its minimum; the prompt_cache_key, only
 *    when a target takes one and the client set none; narrowed by the
 *    call's surface to what it places in its own request (Messages: only
 *    where the client's breakpoints leave room, surfaces/messages/
 *    breakpoints.ts). The upstream stage hands it to the adapter of every
 *    attempt, fallbacks included.
 * 3. What the breakpoints earned is the savings stage's to say, once the call
 *    is answered (stages/savings.ts): only what they saved this client
 *    against its own request sent directly.
 */
export function promptCacheStage(): Stage {
  // Each tenant context's keys by session: a session's calls send the same key, hashed once, not on every call. Bounded
  // (cleared when full); a context is replaced when the tenant's keys or settings change, and its keys go with it.
  const keysOf = new WeakMap<TenantContext, Map<string, string>>();
  const keyFor = (call: Call): string => {
    let keys = keysOf.get(call.tenant);
    if (keys === undefined) {
      keys = new Map();
      keysOf.set(call.tenant, keys);
    }
    const named = sessionOf(call);
    const session = named ?? '';
    let key = keys.get(session);
    if (key === undefined) {
      if (keys.size >= MAX_KEPT_KEYS) keys.clear();
      key = promptCacheKey(call.tenant.tenantId, named);
      keys.set(session, key);
    }
    return key;
  };
  // Not an async function: a call without prompt caching (no session, or turned off) goes on with no promise of its own.
  return function placePromptCache(call, next) {
    try {
      if (!call.surface.stages.promptCache || !promptCacheWanted(call.headers, call.tenant.settings.prompt_cache, sessionOf(call))) return next();
      const targets = call.targets.length > 0 ? call.targets : call.target ? [call.target] : [];
      const takesKey = targets.some((t) => t.provider.promptCacheKey !== undefined) && call.body['prompt_cache_key'] === undefined;
      const plan = planPromptCache({
        messages: call.body.messages,
        tools: call.body['tools'],
        minimum: breakpointMinimum(targets),
        key: takesKey ? keyFor(call) : undefined,
      });
      // A surface of another format places the breakpoints in its own request, where its client's may leave less room.
      call.promptCache = plan && call.surface.promptCachePlan ? call.surface.promptCachePlan(plan) : plan;
    } catch (err) {
      return Promise.reject(err);
    }
    return next();
  };
}

/** The session prompt caching keys on: the client's, else one its surface knows (a Responses chain's first response). */
function sessionOf(call: Call): string | undefined {
  return call.sessionId ?? call.surface.promptCacheSession;
}

/** The smallest minimum among the targets that take breakpoints (Anthropic's format); undefined: none does. */
function breakpointMinimum(targets: readonly CallTarget[]): number | undefined {
  let minimum: number | undefined;
  for (const t of targets) {
    if (t.provider.format !== 'anthropic') continue;
    const m = anthropicMinimum(t.model);
    minimum = minimum === undefined ? m : Math.min(minimum, m);
  }
  return minimum;
}

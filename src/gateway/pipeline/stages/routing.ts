import type { Logger } from 'pino';
import { HttpProblem } from '../../../platform/errors.ts';
import { isCatalogId, resolveModel } from '../../catalog/catalog.ts';
import type { Tier } from '../../catalog/models.ts';
import type { RoutingConfig } from '../../config.ts';
import { modelNotFound, noProviderKey } from '../../openai-errors.ts';
import type { TenantContext } from '../../data-plane/tenant-context.ts';
import type { ProviderAdapter } from '../../providers/types.ts';
import { AUTO_MODEL, autoWithoutRouting, noModelFits } from '../../routing/auto-model.ts';
import { chooseRoute } from '../../routing/choose-route.ts';
import { type AppliedAlias, aliasReason, ModelAliases } from '../../routing/model-aliases.ts';
import { type RouteModel, RoutingPolicy } from '../../routing/policy.ts';
import { PromptFit } from '../../routing/prompt-fit.ts';
import { promptShape } from '../../routing/prompt-shape.ts';
import type { StickyRoutes } from '../../routing/sticky-routes.ts';
import type { Call, CallTarget, Stage } from '../call.ts';

export interface RoutingStageDeps {
  adapters: ReadonlyMap<string, ProviderAdapter>;
  config: RoutingConfig;
  sticky: StickyRoutes;
  log: Logger;
}

/**
 * Routing: where the call goes, and where it may go next. Two stages:
 * `check`, first of all, refuses what no content can change (a model the
 * tenant cannot call, `auto` with nothing to route to or with routing
 * turned off) before any work is spent on the call; `route`, after
 * compaction, decides:
 * 0. A tenant's model alias (settings.models.aliases) replaces the name the
 *    client sent by the model it names, and everything below treats that
 *    model as the one named (the usage record keeps the client's name).
 * 1. The model named is resolved against the catalog and the tenant's keyed
 *    providers (unknown: 404, ambiguous: 404 naming the candidates, no key:
 *    400), unless it is `auto`.
 * 2. `auto`, and a named catalog model when the tenant routes every call
 *    (settings.routing.enabled), are routed: classified, then the cheapest
 *    model of the needed tier that takes the request, sticky per
 *    X-Gateway-Session-Id (routing/choose-route.ts). X-Gateway-No-Route: true
 *    calls the model named as named.
 * 3. `call.targets`: the choice, then the fallbacks that fit (none under
 *    X-Gateway-No-Route); the upstream stage walks them.
 * 4. The baseline goes on the call: what routing saved against it is the
 *    savings stage's to say once the call is answered (stages/savings.ts).
 */
export function routingStages(deps: RoutingStageDeps): { check: Stage; route: Stage } {
  // One policy per tenant context: a context is replaced when its keys or settings change, so is its policy.
  const policies = new WeakMap<TenantContext, RoutingPolicy>();
  const policyOf = (call: Call): RoutingPolicy => {
    let policy = policies.get(call.tenant);
    if (policy === undefined) {
      policy = new RoutingPolicy(call.tenant.settings.routing ?? {}, call.tenant.keyed);
      policies.set(call.tenant, policy);
    }
    return policy;
  };
  const aliases = new WeakMap<TenantContext, ModelAliases>();
  const aliasOf = (call: Call): AppliedAlias | undefined => {
    let table = aliases.get(call.tenant);
    if (table === undefined) {
      table = new ModelAliases(call.tenant.settings.models);
      aliases.set(call.tenant, table);
    }
    return table.size === 0 ? undefined : table.match(call.modelRequested);
  };
  // The targets of a tenant context, by catalog model: made once, not on every call (a target is never changed once
  // made). Only catalog ids: the policy keeps one RouteModel for each, where a model it does not list, or a dated id
  // (any text a client sends), is a new one on every call, which would grow this without bound.
  const targetsOf = new WeakMap<TenantContext, Map<RouteModel, CallTarget>>();
  const targetFor = (call: Call, m: RouteModel): CallTarget => {
    if (!isCatalogId(m)) return target(call, deps.adapters, m);
    let made = targetsOf.get(call.tenant);
    if (made === undefined) {
      made = new Map();
      targetsOf.set(call.tenant, made);
    }
    let found = made.get(m);
    if (found === undefined) {
      found = target(call, deps.adapters, m);
      made.set(m, found);
    }
    return found;
  };
  // Not an async function: a call that passes (most) goes on with no promise of this stage's own.
  const check: Stage = function checkModel(call, next) {
    try {
      const named = aliasOf(call)?.target ?? call.modelRequested;
      if (named !== AUTO_MODEL) resolveRequested(named, call, policyOf(call));
      else if (call.noRoute) throw autoWithoutRouting();
      else if (policyOf(call).candidates(1).length === 0) throw noModelFits(undefined);
    } catch (err) {
      return Promise.reject(err);
    }
    return next();
  };
  const route: Stage = async function route(call, next) {
    const settings = call.tenant.settings.routing ?? {};
    const alias = aliasOf(call);
    const named = alias?.target ?? call.modelRequested;
    const auto = named === AUTO_MODEL;
    const policy = policyOf(call);
    const requested = auto ? undefined : resolveRequested(named, call, policy);
    const fit = new PromptFit(call.body, promptShape(call.body));
    // A long prompt is counted here, a slice at a time, rather than at once inside the choice below.
    const counting = fit.countIfLong();
    if (counting !== undefined) await counting;

    let chosen = requested;
    let baseline: RouteModel | undefined;
    if (!call.noRoute && (auto || (settings.enabled === true && requested?.entry !== undefined))) {
      const ttlMs = (settings.sticky_ttl_seconds ?? 0) * 1000 || deps.config.stickyTtlMs;
      const key = call.sessionId === undefined ? undefined : `gw:route:${call.tenant.tenantId}:${call.modelRequested}:${call.sessionId}`;
      const stuck = key === undefined ? undefined : safely(deps.log, () => deps.sticky.get(key, ttlMs));
      const held = stuck instanceof Promise ? await stuck : stuck;
      const choice = chooseRoute(policy, fit, { minTier: (settings.min_tier ?? 1) as Tier, held, requested });
      if (choice === undefined) throw noModelFits(policy.cheapest(1, withoutSizes(fit)) ? fit.promptTokens() : undefined);
      chosen = choice.chosen;
      call.routeReason = choice.reason;
      if (key !== undefined && (held?.model !== choice.chosen.ref || held.tier !== choice.tier)) {
        // Another replica may have raised the session meanwhile: what the session holds wins.
        const stored = await safely(deps.log, () => deps.sticky.raise(call.tenant.tenantId, key, { model: choice.chosen.ref, tier: choice.tier }, ttlMs));
        const other = stored && stored.model !== choice.chosen.ref ? policy.resolve(stored.model) : undefined;
        if (other && fit.accepts(other.provider, other.entry) && fit.fits(other.entry)) {
          chosen = other;
          call.routeReason = `sticky session tier=${stored!.tier}`;
        }
      }
      baseline = requested ?? policy.baseline(fit);
    }
    if (chosen === undefined) throw modelNotFound(call.modelRequested);
    // The alias is what the tenant chose, so it leads the reason; routing's own choice (and the upstream stage's fallback) follow it.
    if (alias !== undefined) call.routeReason = call.routeReason === undefined ? aliasReason(alias) : `${aliasReason(alias)}; ${call.routeReason}`;
    const fallbacks = call.noRoute ? [] : policy.fallbacks(chosen, named, fit, deps.config.defaultFallbacks, alias && call.modelRequested);
    call.targets = [targetFor(call, chosen)];
    for (const m of fallbacks) {
      if (call.tenant.providerKeys.has(m.provider.id) && deps.adapters.has(m.provider.id)) call.targets.push(targetFor(call, m));
    }
    call.target = call.targets[0];

    // Routing's saving, against the model the client named, is the savings stage's (stages/savings.ts).
    if (baseline?.entry) call.baseline = baseline;
    return next();
  };
  return { check, route };
}

/** The model named (the client's, or its alias's), as routing knows it; the errors a client gets for a model it cannot call. */
function resolveRequested(named: string, call: Call, policy: RoutingPolicy): RouteModel {
  const resolved = policy.resolve(named);
  if (resolved !== undefined) return resolved;
  const resolution = resolveModel(named, call.tenant.keyed);
  if (!resolution.ok && resolution.reason === 'no_key') throw noProviderKey(resolution.provider);
  if (!resolution.ok && resolution.reason === 'ambiguous') {
    throw new HttpProblem(
      404,
      'model_not_found',
      `The model "${named}" is served by several of your providers; name one: ${resolution.candidates.join(', ')}.`,
      { type: 'invalid_request_error', param: 'model' },
    );
  }
  throw modelNotFound(named);
}

function target(call: Call, adapters: ReadonlyMap<string, ProviderAdapter>, m: RouteModel): CallTarget {
  const key = call.tenant.providerKeys.get(m.provider.id);
  const adapter = adapters.get(m.provider.id);
  if (!key || !adapter) throw noProviderKey(m.provider.id);
  return { provider: m.provider, model: m.model, ref: m.ref, entry: m.entry, adapter, apiKey: key.apiKey, baseUrl: key.baseUrl, circuit: key.circuit };
}

/** The same request with its sizes ignored: tells "too large for every window" from "no model takes this kind of request". */
function withoutSizes(fit: PromptFit): PromptFit {
  const shape = { ...fit.shape, tokenBound: 0, maxOutput: 1 };
  return new PromptFit({ model: AUTO_MODEL, messages: [] }, shape);
}

/**
 * Sticky sessions are an optimisation: a Redis failure routes the call
 * without them rather than failing it. A value at once stays one (the
 * memory store's): no promise for the caller to wait on.
 */
function safely<T>(log: Logger, op: () => T | Promise<T>): T | undefined | Promise<T | undefined> {
  const unavailable = (err: unknown) => {
    log.warn({ err }, 'sticky routes unavailable; routing without the session');
    return undefined;
  };
  try {
    const result = op();
    return result instanceof Promise ? result.catch(unavailable) : result;
  } catch (err) {
    return unavailable(err);
  }
}

import type { Tier } from '../catalog/models.ts';
import { classify } from './classifier.ts';
import type { RoutingPolicy, RouteModel } from './policy.ts';
import type { PromptFit } from './prompt-fit.ts';
import type { StickyRoute } from './sticky-routes.ts';

/** Routing's decision for one call. */
export interface RouteChoice {
  chosen: RouteModel;
  /** The tier the call was routed at (what a session stores). */
  tier: Tier;
  /** X-Gateway-Route-Reason: short ASCII. */
  reason: string;
}

/**
 * Chooses the model for a routed call:
 * 1. the needed tier: the classifier's, raised to the tenant's `min_tier`
 *    and to the tier the session already holds (a session never falls);
 * 2. the session's model, when it was routed at that tier or above and
 *    still takes the request (its provider's prompt cache is warm);
 * 3. else the cheapest model of that tier or above that takes the request;
 * 4. for an explicitly named model (a tenant routing every call), never one
 *    dearer than the model named: the named one is kept instead.
 * Undefined when no model of the tenant's takes the request.
 */
export function chooseRoute(
  policy: RoutingPolicy,
  fit: PromptFit,
  options: { minTier: Tier; held: StickyRoute | undefined; requested: RouteModel | undefined },
): RouteChoice | undefined {
  const difficulty = classify(fit.shape);
  const { held, requested } = options;
  const classified = Math.max(difficulty.tier, options.minTier) as Tier;
  const tier = Math.max(classified, held?.tier ?? 1) as Tier;
  const why = `tier=${tier}${difficulty.signals.length ? ` ${difficulty.signals.join(',')}` : ''}`;

  if (held !== undefined && held.tier >= classified) {
    const kept = policy.resolve(held.model);
    if (kept && fit.accepts(kept.provider, kept.entry) && fit.fits(kept.entry)) {
      return { chosen: kept, tier: held.tier, reason: `sticky session tier=${held.tier}` };
    }
  }
  const raised = held !== undefined && tier > held.tier ? `; session tier raised from ${held.tier}` : '';
  const cheapest = policy.cheapest(tier, fit);
  if (requested !== undefined) {
    const named = fit.estimate(requested.entry);
    const best = cheapest ? fit.estimate(cheapest.entry) : undefined;
    if (cheapest === undefined || best === undefined || named === undefined || best >= named || cheapest.ref === requested.ref) {
      return { chosen: requested, tier, reason: `${why}; requested model kept${raised}` };
    }
  }
  if (cheapest === undefined) return undefined;
  return { chosen: cheapest, tier, reason: `${why}; cheapest fit ${cheapest.ref}${raised}` };
}

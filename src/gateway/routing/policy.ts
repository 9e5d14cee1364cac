import { isCatalogId, resolveModel } from '../catalog/catalog.ts';
import { type CatalogModel, MODELS, type Tier, TIERS } from '../catalog/models.ts';
import type { ProviderInfo } from '../providers/registry.ts';
import type { RoutingSettings } from '../settings/routing.ts';
import type { PromptFit } from './prompt-fit.ts';

/** A model routing may send a call to: resolved against the tenant's providers, with its tier. */
export interface RouteModel {
  /** `provider/model`. */
  ref: string;
  provider: ProviderInfo;
  model: string;
  entry: CatalogModel | undefined;
  /** The tier it serves: the tenant's listing, else the catalog's; undefined for an unlisted model. */
  tier: Tier | undefined;
}

/**
 * A tenant's routing policy over its providers: which models serve which
 * tier, the cheapest that fits a request, the baseline savings are measured
 * against, and the fallback chains. Pure: the stage hands it the settings,
 * the keyed providers and the request's fit.
 */
export class RoutingPolicy {
  readonly #settings: RoutingSettings;
  readonly #keyed: ReadonlySet<string>;
  /** candidates() by tier: a policy lives as long as its tenant's cached context (the stage keeps one per context). */
  readonly #byTier = new Map<Tier, RouteModel[]>();
  /**
   * resolve() of catalog models, by the text resolved: every routed call
   * resolves the model it names and the one its session holds. Catalog ids
   * only (isCatalogId), so that what clients write cannot grow it past the
   * catalog.
   */
  readonly #resolved = new Map<string, RouteModel>();

  constructor(settings: RoutingSettings, keyed: ReadonlySet<string>) {
    this.#settings = settings;
    this.#keyed = keyed;
  }

  /** `provider/model` or a bare catalog id, as a RouteModel; undefined when the tenant cannot call it. */
  resolve(ref: string, tier?: Tier): RouteModel | undefined {
    if (tier === undefined) {
      const known = this.#resolved.get(ref);
      if (known !== undefined) return known;
    }
    const r = resolveModel(ref, this.#keyed);
    if (!r.ok) return undefined;
    const { provider, model, entry } = r.resolved;
    const full = `${provider.id}/${model}`;
    const resolved = { ref: full, provider, model, entry, tier: tier ?? this.#listedTier(full) ?? entry?.tier };
    if (tier === undefined && isCatalogId(resolved)) this.#resolved.set(ref, resolved);
    return resolved;
  }

  /** The models that may serve tier `tier` or above (the tenant's `tiers` lists, else the catalog's tiers), lowest tier first. */
  candidates(tier: Tier): RouteModel[] {
    let found = this.#byTier.get(tier);
    if (found === undefined) {
      found = this.#candidates(tier);
      this.#byTier.set(tier, found);
    }
    return found;
  }

  #candidates(tier: Tier): RouteModel[] {
    const lists = this.#settings.tiers;
    const out: RouteModel[] = [];
    if (lists) {
      for (const level of TIERS) {
        if (level < tier) continue;
        for (const ref of lists[String(level) as '1' | '2' | '3'] ?? []) {
          const m = this.resolve(ref, level);
          if (m) out.push(m);
        }
      }
      return out;
    }
    for (const entry of MODELS) {
      if (entry.tier < tier || !this.#keyed.has(entry.provider)) continue;
      const m = this.resolve(`${entry.provider}/${entry.id}`);
      if (m) out.push(m);
    }
    return out;
  }

  /** The cheapest candidate for `tier` that takes the request (unpriced models last, in listed order). */
  cheapest(tier: Tier, fit: PromptFit, except?: string): RouteModel | undefined {
    return cheapestOf(this.candidates(tier), fit, (m) => m.ref !== except && usable(m, fit));
  }

  /**
   * What model `auto`'s saving is measured against: the tenant's `baseline`,
   * else the cheapest model of the highest tier its providers serve (what a
   * client wanting the best answer would have named).
   */
  baseline(fit: PromptFit): RouteModel | undefined {
    if (this.#settings.baseline) return this.resolve(this.#settings.baseline);
    for (const tier of [3, 2, 1] as const) {
      const top = cheapestOf(this.candidates(tier), fit, (m) => m.tier === tier && m.entry !== undefined);
      if (top) return top;
    }
    return undefined;
  }

  /**
   * The fallbacks after `chosen` that take the request: the tenant's chain for
   * the chosen model, else for the model as requested (`auto` included; an
   * alias's target), else for the name an alias replaced (`aliased`), else
   * the default chain of `defaultLength`: other models of the same tier or
   * above, other providers first (an outage is usually a provider's), cheapest
   * first. A model whose window cannot hold the request is skipped.
   */
  fallbacks(chosen: RouteModel, requested: string, fit: PromptFit, defaultLength: number, aliased?: string): RouteModel[] {
    const chains = this.#settings.fallbacks;
    // Own keys only: a name a client sends (`constructor`) must not find Object.prototype's.
    const chain = (name: string | undefined) => (chains !== undefined && name !== undefined && Object.hasOwn(chains, name) ? chains[name] : undefined);
    const configured = chain(chosen.ref) ?? chain(requested) ?? chain(aliased);
    if (configured) {
      const out: RouteModel[] = [];
      for (const ref of configured) {
        const m = this.resolve(ref);
        if (m && m.ref !== chosen.ref && usable(m, fit) && !out.some((o) => o.ref === m.ref)) out.push(m);
      }
      return out;
    }
    if (this.#settings.default_fallbacks === false || defaultLength === 0 || chosen.tier === undefined) return [];
    const ranked = rank(this.candidates(chosen.tier), fit, (m) => m.ref !== chosen.ref && m.entry !== undefined && usable(m, fit));
    // First the cheapest model of each other provider, then the rest, cheapest first: at most defaultLength.
    const out: RouteModel[] = [];
    const providers: string[] = [];
    for (const m of ranked) {
      if (out.length === defaultLength) return out;
      if (m.provider.id === chosen.provider.id || providers.includes(m.provider.id)) continue;
      providers.push(m.provider.id);
      out.push(m);
    }
    for (const m of ranked) {
      if (out.length === defaultLength) break;
      if (!out.includes(m)) out.push(m);
    }
    return out;
  }

  #listedTier(ref: string): Tier | undefined {
    const lists = this.#settings.tiers;
    if (!lists) return undefined;
    return TIERS.find((level) => lists[String(level) as '1' | '2' | '3']?.includes(ref));
  }
}

const usable = (m: RouteModel, fit: PromptFit) => fit.accepts(m.provider, m.entry) && fit.fits(m.entry);

/**
 * The models `keep` accepts, cheapest first by the request's estimated cost;
 * ties to the lower tier, then in listed order; unpriced models last, in
 * order. An insertion sort, each cost computed once: a tier lists a dozen
 * models or so, and this runs on every routed call.
 */
function rank(models: readonly RouteModel[], fit: PromptFit, keep: (m: RouteModel) => boolean): RouteModel[] {
  const out: RouteModel[] = [];
  const costs: number[] = [];
  for (const m of models) {
    if (!keep(m)) continue;
    const cost = fit.estimate(m.entry) ?? Number.POSITIVE_INFINITY;
    const tier = m.tier ?? 9;
    // Shifted by hand: splice would make an array of the (no) removed elements each time.
    let at = out.length;
    out.push(m);
    costs.push(cost);
    while (at > 0 && (costs[at - 1]! > cost || (costs[at - 1] === cost && (out[at - 1]!.tier ?? 9) > tier))) {
      out[at] = out[at - 1]!;
      costs[at] = costs[at - 1]!;
      at--;
    }
    out[at] = m;
    costs[at] = cost;
  }
  return out;
}

/** The first model of {@link rank}'s order, without ordering the others. */
function cheapestOf(models: readonly RouteModel[], fit: PromptFit, keep: (m: RouteModel) => boolean): RouteModel | undefined {
  let best: RouteModel | undefined;
  let bestCost = Number.POSITIVE_INFINITY;
  for (const m of models) {
    if (!keep(m)) continue;
    const cost = fit.estimate(m.entry) ?? Number.POSITIVE_INFINITY;
    if (best === undefined || cost < bestCost || (cost === bestCost && (m.tier ?? 9) < (best.tier ?? 9))) {
      best = m;
      bestCost = cost;
    }
  }
  return best;
}

import { findProvider, type ProviderInfo } from '../providers/registry.ts';
import { type CatalogModel, MODELS } from './models.ts';

/** A model as a call addresses it: the provider, the provider's own id, and the catalog entry when there is one. */
export interface ResolvedModel {
  provider: ProviderInfo;
  /** The provider's model id (what is sent upstream). */
  model: string;
  /** Undefined for a model the catalog does not list: it can be called, its cost is unknown. */
  entry: CatalogModel | undefined;
}

export type Resolution =
  | { ok: true; resolved: ResolvedModel }
  | { ok: false; reason: 'unknown' | 'ambiguous'; candidates: string[] }
  | { ok: false; reason: 'no_key'; provider: string };

const byKey = new Map(MODELS.map((m) => [`${m.provider}/${m.id}`, m]));
const byId = new Map<string, CatalogModel[]>();
for (const model of MODELS) byId.set(model.id, [...(byId.get(model.id) ?? []), model]);

/** The catalog entry of `provider/model`, if listed. */
export function catalogEntry(provider: string, model: string): CatalogModel | undefined {
  return byKey.get(`${provider}/${model}`);
}

/**
 * Resolves what a client wrote in `model`, given the providers the tenant
 * has keys for:
 * 1. `provider/model` with a known provider: that provider, the rest as its
 *    model id (listed or not: self-hosted and new models have no entry).
 * 2. a bare id: the catalog's entries with that id among the keyed
 *    providers; exactly one resolves, several are ambiguous; none but one
 *    listed elsewhere says which key is missing.
 */
export function resolveModel(requested: string, keyed: ReadonlySet<string>, catalog: readonly CatalogModel[] = MODELS): Resolution {
  const entries = catalog === MODELS ? byKey : new Map(catalog.map((m) => [`${m.provider}/${m.id}`, m]));
  const slash = requested.indexOf('/');
  if (slash > 0) {
    const provider = findProvider(requested.slice(0, slash));
    const model = requested.slice(slash + 1);
    if (provider && model) {
      if (!keyed.has(provider.id)) return { ok: false, reason: 'no_key', provider: provider.id };
      return { ok: true, resolved: { provider, model, entry: entries.get(`${provider.id}/${model}`) } };
    }
  }
  const listed = catalog === MODELS ? (byId.get(requested) ?? []) : catalog.filter((m) => m.id === requested);
  const usable = listed.filter((m) => keyed.has(m.provider));
  if (usable.length === 1) {
    const entry = usable[0]!;
    return { ok: true, resolved: { provider: findProvider(entry.provider)!, model: entry.id, entry } };
  }
  if (usable.length > 1) return { ok: false, reason: 'ambiguous', candidates: usable.map((m) => `${m.provider}/${m.id}`) };
  if (listed.length === 1) return { ok: false, reason: 'no_key', provider: listed[0]!.provider };
  return { ok: false, reason: 'unknown', candidates: listed.map((m) => `${m.provider}/${m.id}`) };
}

/** The catalog models of the keyed providers, as GET /v1/models lists them. */
export function listedModels(keyed: ReadonlySet<string>): CatalogModel[] {
  return MODELS.filter((m) => keyed.has(m.provider));
}

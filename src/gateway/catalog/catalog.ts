import { findProvider, type ProviderInfo } from '../providers/registry.ts';
import { type CatalogModel, EMBEDDING_MODELS, MODELS } from './models.ts';

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

/** A catalog's entries by `provider/model` and by bare id, made once per list (MODELS, EMBEDDING_MODELS, a test's own). */
interface CatalogIndex {
  byKey: ReadonlyMap<string, CatalogModel>;
  byId: ReadonlyMap<string, readonly CatalogModel[]>;
}

const indexes = new WeakMap<readonly CatalogModel[], CatalogIndex>();

function indexOf(catalog: readonly CatalogModel[]): CatalogIndex {
  let index = indexes.get(catalog);
  if (index === undefined) {
    const byId = new Map<string, CatalogModel[]>();
    for (const model of catalog) byId.set(model.id, [...(byId.get(model.id) ?? []), model]);
    index = { byKey: new Map(catalog.map((m) => [`${m.provider}/${m.id}`, m])), byId };
    indexes.set(catalog, index);
  }
  return index;
}

/** The catalog entry of `provider/model`, if listed. */
export function catalogEntry(provider: string, model: string): CatalogModel | undefined {
  return indexOf(MODELS).byKey.get(`${provider}/${model}`);
}

/**
 * A model called by its catalog id: one of a bounded set. A dated Anthropic
 * id is priced as its entry but is text a client chose (any date), so it is
 * never kept in a cache or a metric label keyed by model.
 */
export const isCatalogId = (m: { model: string; entry: CatalogModel | undefined }): boolean => m.entry !== undefined && m.model === m.entry.id;

/** Anthropic's model ids all start so; any other such name goes to the tenant's `anthropic` provider (docs/gateway-api.md#models). */
export const ANTHROPIC_PREFIX = 'claude-';
const ANTHROPIC = 'anthropic';
const LATEST = '-latest';

/**
 * The catalog entry an Anthropic model name stands for: the id itself, else
 * the id without a date (`claude-sonnet-4-5-20250929`) or `-latest`
 * (`claude-sonnet-4-5-latest`), else that stem's `-latest` alias
 * (`claude-3-5-haiku-20241022` is `claude-3-5-haiku-latest`). At most
 * three map lookups; the suffix is read from the end, no pattern.
 */
function anthropicEntry(model: string, entries: ReadonlyMap<string, CatalogModel>): CatalogModel | undefined {
  const exact = entries.get(`${ANTHROPIC}/${model}`);
  if (exact !== undefined) return exact;
  const stem = model.endsWith(LATEST) ? model.slice(0, -LATEST.length) : dateless(model);
  if (stem === undefined) return undefined;
  return entries.get(`${ANTHROPIC}/${stem}`) ?? entries.get(`${ANTHROPIC}/${stem}${LATEST}`);
}

/** `model` without a trailing `-YYYYMMDD`, or undefined when it has none. */
function dateless(model: string): string | undefined {
  const dash = model.length - 9;
  if (dash < 1 || model.charCodeAt(dash) !== 45 /* - */) return undefined;
  for (let i = dash + 1; i < model.length; i++) {
    const c = model.charCodeAt(i);
    if (c < 48 || c > 57) return undefined;
  }
  return model.slice(0, dash);
}

/**
 * Resolves what a client wrote in `model`, given the providers the tenant
 * has keys for:
 * 1. `provider/model` with a known provider: that provider, the rest as its
 *    model id (listed or not: self-hosted and new models have no entry).
 *    An Anthropic model's dated id or `-latest` alias is priced as the
 *    catalog entry it names (anthropicEntry); the name goes upstream as
 *    written.
 * 2. a bare id: the catalog's entries with that id among the keyed
 *    providers; exactly one resolves, several are ambiguous; none but one
 *    listed elsewhere says which key is missing.
 * 3. any other `claude-*` name: the tenant's `anthropic` provider, priced
 *    as in 1 when it names a catalog entry, else unpriced (a model newer
 *    than the catalog: Claude Code sends its own default as it is).
 */
export function resolveModel(requested: string, keyed: ReadonlySet<string>, catalog: readonly CatalogModel[] = MODELS): Resolution {
  const { byKey: entries, byId } = indexOf(catalog);
  const slash = requested.indexOf('/');
  if (slash > 0) {
    const provider = findProvider(requested.slice(0, slash));
    const model = requested.slice(slash + 1);
    if (provider && model) {
      if (!keyed.has(provider.id)) return { ok: false, reason: 'no_key', provider: provider.id };
      const entry = provider.id === ANTHROPIC ? anthropicEntry(model, entries) : entries.get(`${provider.id}/${model}`);
      return { ok: true, resolved: { provider, model, entry } };
    }
  }
  const listed = byId.get(requested) ?? [];
  const usable = listed.filter((m) => keyed.has(m.provider));
  if (usable.length === 1) {
    const entry = usable[0]!;
    return { ok: true, resolved: { provider: findProvider(entry.provider)!, model: entry.id, entry } };
  }
  if (usable.length > 1) return { ok: false, reason: 'ambiguous', candidates: usable.map((m) => `${m.provider}/${m.id}`) };
  if (listed.length === 1) return { ok: false, reason: 'no_key', provider: listed[0]!.provider };
  if (listed.length === 0 && requested.length > ANTHROPIC_PREFIX.length && requested.startsWith(ANTHROPIC_PREFIX)) {
    if (!keyed.has(ANTHROPIC)) return { ok: false, reason: 'no_key', provider: ANTHROPIC };
    return { ok: true, resolved: { provider: findProvider(ANTHROPIC)!, model: requested, entry: anthropicEntry(requested, entries) } };
  }
  return { ok: false, reason: 'unknown', candidates: listed.map((m) => `${m.provider}/${m.id}`) };
}

/** The catalog models of the keyed providers, as GET /v1/models lists them. */
export function listedModels(keyed: ReadonlySet<string>): CatalogModel[] {
  return MODELS.filter((m) => keyed.has(m.provider));
}

/** The embedding models of the keyed providers (GET /v1/models lists them after the chat models). */
export function listedEmbeddingModels(keyed: ReadonlySet<string>): CatalogModel[] {
  return EMBEDDING_MODELS.filter((m) => keyed.has(m.provider));
}

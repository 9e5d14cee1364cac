import { type ResolvedModel, resolveModel } from '../../catalog/catalog.ts';
import { EMBEDDING_MODELS } from '../../catalog/models.ts';
import type { TenantContext } from '../../data-plane/tenant-context.ts';
import { modelNotFound, noProviderKey } from '../../openai-errors.ts';
import type { Call, Stage } from '../../pipeline/call.ts';
import { findProvider } from '../../providers/registry.ts';
import type { ProviderAdapter } from '../../providers/types.ts';
import { aliasReason, ModelAliases } from '../../routing/model-aliases.ts';
import { embeddingsNotSupported } from './errors.ts';

/**
 * The model of an embeddings call, and the one target it goes to, before
 * any work is spent on it:
 * 1. a tenant's model alias replaces the name sent, as on every surface
 *    (the usage record keeps the client's name; X-Gateway-Route-Reason says so);
 * 2. the name is resolved against the embedding models of the catalog and
 *    the tenant's keyed providers (catalog.ts resolveModel): `provider/model`
 *    goes to that provider, listed or not (unpriced then); a bare id must
 *    be an embedding model one keyed provider lists: otherwise 404, as for
 *    chat (a chat model's bare id included);
 * 3. a provider without an embeddings API (Anthropic: a `claude-*` name, or
 *    `anthropic/...`) is 400 `embeddings_not_supported`, key or no key; a
 *    provider without the tenant's key is 400 `provider_key_missing`.
 * No routing and no fallback: a vector is only comparable with vectors of
 * the same model, so another model's would be a wrong answer, not a
 * fallback. The upstream stage still retries the one target.
 */
export function embeddingModelStage(adapters: ReadonlyMap<string, ProviderAdapter>): Stage {
  // One alias table per tenant context (a context is replaced when its settings change).
  const tables = new WeakMap<TenantContext, ModelAliases>();
  const aliasesOf = (tenant: TenantContext): ModelAliases => {
    let table = tables.get(tenant);
    if (table === undefined) {
      table = new ModelAliases(tenant.settings.models);
      tables.set(tenant, table);
    }
    return table;
  };
  // Not an async function: a call that passes goes on with no promise of this stage's own.
  return function chooseEmbeddingModel(call, next) {
    try {
      const aliases = aliasesOf(call.tenant);
      const alias = aliases.size === 0 ? undefined : aliases.match(call.modelRequested);
      const named = alias?.target ?? call.modelRequested;
      const { provider, model, entry } = resolveEmbeddingModel(named, call);
      const key = call.tenant.providerKeys.get(provider.id);
      const adapter = adapters.get(provider.id);
      if (key === undefined || adapter === undefined) throw noProviderKey(provider.id);
      const target = { provider, model, ref: `${provider.id}/${model}`, entry, adapter, apiKey: key.apiKey, baseUrl: key.baseUrl, circuit: key.circuit };
      call.target = target;
      call.targets = [target];
      if (alias !== undefined) call.routeReason = aliasReason(alias);
    } catch (err) {
      return Promise.reject(err);
    }
    return next();
  };
}

function resolveEmbeddingModel(named: string, call: Call): ResolvedModel {
  const resolution = resolveModel(named, call.tenant.keyed, EMBEDDING_MODELS);
  if (resolution.ok) {
    const { provider } = resolution.resolved;
    if (provider.format !== 'openai') throw embeddingsNotSupported(provider.name, named);
    return resolution.resolved;
  }
  if (resolution.reason === 'no_key') {
    const provider = findProvider(resolution.provider);
    if (provider !== undefined && provider.format !== 'openai') throw embeddingsNotSupported(provider.name, named);
    throw noProviderKey(resolution.provider);
  }
  throw modelNotFound(named);
}

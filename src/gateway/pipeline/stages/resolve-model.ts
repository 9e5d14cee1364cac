import { HttpProblem } from '../../../platform/errors.ts';
import { resolveModel } from '../../catalog/catalog.ts';
import { modelNotFound, noProviderKey } from '../../openai-errors.ts';
import type { ProviderAdapter } from '../../providers/types.ts';
import type { Stage } from '../call.ts';

/**
 * Routing, in its first form: the model the client named, resolved against
 * the catalog and the providers the tenant holds keys for, with the
 * tenant's key and base URL. Fallbacks and routing rules replace this stage
 * in the next step; everything after it reads only `call.target`.
 */
export function resolveModelStage(adapters: ReadonlyMap<string, ProviderAdapter>): Stage {
  return async function resolveTarget(call, next) {
    const resolution = resolveModel(call.modelRequested, call.tenant.keyed);
    if (!resolution.ok) {
      if (resolution.reason === 'no_key') throw noProviderKey(resolution.provider);
      if (resolution.reason === 'ambiguous') {
        throw new HttpProblem(
          404,
          'model_not_found',
          `The model "${call.modelRequested}" is served by several of your providers; name one: ${resolution.candidates.join(', ')}.`,
          { type: 'invalid_request_error', param: 'model' },
        );
      }
      throw modelNotFound(call.modelRequested);
    }
    const { provider, model, entry } = resolution.resolved;
    const key = call.tenant.providerKeys.get(provider.id);
    const adapter = adapters.get(provider.id);
    if (!key || !adapter) throw noProviderKey(provider.id);
    call.target = { provider, model, entry, adapter, apiKey: key.apiKey, baseUrl: key.baseUrl };
    call.targets = [call.target];
    await next();
  };
}

import { HttpProblem } from '../../platform/errors.ts';
import type { CatalogModel } from '../catalog/models.ts';

/** The model name that asks the gateway to choose (docs/gateway-routing.md). */
export const AUTO_MODEL = 'auto';

/** GET /v1/models' entry for `auto`, listed when the tenant has any catalog model to route to. */
export function autoModelListing(models: readonly CatalogModel[]): Record<string, unknown>[] {
  if (models.length === 0) return [];
  return [{ id: AUTO_MODEL, object: 'model', created: 0, owned_by: 'gateway', routed: true }];
}

export const autoWithoutRouting = () =>
  new HttpProblem(
    400,
    'route_required',
    'The model "auto" is chosen by routing, and X-Gateway-No-Route: true turns routing off; name a model or drop the header.',
    { type: 'invalid_request_error', param: 'model' },
  );

export const noModelFits = (tokens: number | undefined) =>
  new HttpProblem(
    400,
    'no_model_fits',
    tokens === undefined
      ? 'None of your providers\' catalog models (GET /v1/models) can take this request (its images, response format or number of choices); name a model.'
      : `None of your providers' models has a context window for this request (about ${tokens} prompt tokens plus the output); shorten it or name a model.`,
    { type: 'invalid_request_error', param: 'messages' },
  );

import { Type } from 'typebox';
import type { App } from '../../../platform/http.ts';
import { limitsReport } from '../../budgets/consumption.ts';
import type { GatewayDeps } from '../../deps.ts';
import { Limits } from '../../settings/limits.ts';

const LimitUsage = Type.Object({
  limit: Type.Number(),
  used: Type.Number({ description: 'Settled consumption in the current window.' }),
  reserved: Type.Number({ description: 'Held by calls in flight until they settle.' }),
  remaining: Type.Number(),
  window_start: Type.String({ format: 'date-time' }),
  resets_at: Type.String({ format: 'date-time' }),
});

const Usage = Type.Object({
  requests_per_minute: Type.Optional(LimitUsage),
  tokens_per_day: Type.Optional(LimitUsage),
  usd_per_month: Type.Optional(LimitUsage),
});

/**
 * Consumption against limits. Limits are set with PATCH /api/v1/tenant
 * (`settings.limits`, the tenant's) and PATCH /api/v1/tenant/api-keys/{id}
 * (`limits`, one key's).
 */
export async function controlLimitRoutes(app: App, deps: GatewayDeps): Promise<void> {
  app.get(
    '/api/v1/tenant/limits',
    {
      schema: {
        summary: "The tenant's and each live key's limits, with what each current window has used and holds",
        response: {
          200: Type.Object({
            tenant: Type.Object({ limits: Limits, usage: Usage }),
            api_keys: Type.Array(Type.Object({ id: Type.String(), name: Type.String(), prefix: Type.String(), limits: Limits, usage: Usage })),
          }),
        },
      },
    },
    async (request) => limitsReport(deps, request.tenantId),
  );
}

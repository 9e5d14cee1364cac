import { type Static, Type } from 'typebox';
import { PROVIDERS } from '../providers/registry.ts';

/**
 * `provider/model` with a provider of the registry: what a tenant names in
 * its routing settings. Checked when the settings are written, so a typo is
 * a 400 naming the field rather than a model that silently never routes.
 * Visible ASCII only: the names reach X-Gateway-Route-Reason.
 */
export const PROVIDER_MODEL = `(?:${PROVIDERS.map((p) => p.id).join('|')})/[\\x21-\\x7e]{1,200}`;
const MODEL_REF = `^${PROVIDER_MODEL}$`;
const modelRef = (description = 'A model as `provider/model`, e.g. `openai/gpt-5-mini`.') => Type.String({ pattern: MODEL_REF, description });
const ModelRef = modelRef();
const ModelList = Type.Array(ModelRef, { minItems: 1, maxItems: 20 });

/**
 * A tenant's routing and fallback settings (docs/gateway-routing.md). Every
 * field is optional; unset ones take the gateway's defaults. Model `auto` is
 * always routed; `enabled` routes explicitly named models too (never to a
 * model dearer than the one named).
 */
export const RoutingSettings = Type.Object(
  {
    enabled: Type.Optional(Type.Boolean({ description: 'Route explicitly named models too (model `auto` is always routed).' })),
    min_tier: Type.Optional(Type.Integer({ minimum: 1, maximum: 3, description: 'No request is routed below this tier (1 light, 2 standard, 3 frontier).' })),
    tiers: Type.Optional(
      Type.Object(
        { '1': Type.Optional(ModelList), '2': Type.Optional(ModelList), '3': Type.Optional(ModelList) },
        {
          additionalProperties: false,
          description: "The models that may serve each tier, instead of the catalog's tiers; a request needing tier n goes to the cheapest fit listed under n or above.",
        },
      ),
    ),
    baseline: Type.Optional(modelRef("What model `auto`'s saving is measured against (default: the cheapest model of the highest tier).")),
    fallbacks: Type.Optional(
      Type.Record(Type.String({ minLength: 1, maxLength: 256 }), Type.Array(ModelRef, { maxItems: 5 }), {
        maxProperties: 100,
        description: 'Fallback chains by model (`provider/model`, or as the client names it, `auto` included); an empty chain means none.',
      }),
    ),
    default_fallbacks: Type.Optional(Type.Boolean({ description: 'Fall back along the default chain where no chain is configured (default true).' })),
    sticky_ttl_seconds: Type.Optional(
      Type.Integer({ minimum: 60, maximum: 7 * 86_400, description: 'How long a session keeps its routed model after its last call (default 1 hour).' }),
    ),
  },
  { additionalProperties: false },
);
export type RoutingSettings = Static<typeof RoutingSettings>;

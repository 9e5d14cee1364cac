import { type Static, Type } from 'typebox';

/** A tenant's routing and fallback settings. */
export const RoutingSettings = Type.Object(
  {
    enabled: Type.Optional(Type.Boolean({ description: 'Route explicitly named models too (model `auto` is always routed).' })),
  },
  { additionalProperties: false },
);
export type RoutingSettings = Static<typeof RoutingSettings>;

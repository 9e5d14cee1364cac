import { type Static, Type } from 'typebox';

/** A tenant's response-cache settings (each unset field takes the gateway's default, docs/configuration.md). */
export const CacheSettings = Type.Object(
  {
    enabled: Type.Optional(Type.Boolean({ description: 'Answer identical requests from the cache (default true).' })),
    ttl_seconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 30 * 86_400, description: 'How long an answer is reused.' })),
    max_entry_bytes: Type.Optional(
      Type.Integer({ minimum: 1024, maximum: 512 * 1024 * 1024, description: "A larger answer is served but not stored (never above the gateway's GATEWAY_CACHE_MAX_ENTRY_BYTES)." }),
    ),
    dedup: Type.Optional(
      Type.Boolean({ description: 'Identical requests arriving while the first is still upstream wait for its answer (default true; off when enabled is false).' }),
    ),
  },
  { additionalProperties: false },
);
export type CacheSettings = Static<typeof CacheSettings>;

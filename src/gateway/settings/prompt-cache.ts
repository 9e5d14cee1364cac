import { type Static, Type } from 'typebox';

/** A tenant's provider prompt-caching settings. */
export const PromptCacheSettings = Type.Object(
  {
    enabled: Type.Optional(Type.Boolean({ description: 'Place provider prompt-cache hints (default true).' })),
  },
  { additionalProperties: false },
);
export type PromptCacheSettings = Static<typeof PromptCacheSettings>;

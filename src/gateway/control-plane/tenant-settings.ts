import { type Static, Type } from 'typebox';
import { Value } from 'typebox/value';
import { CacheSettings } from '../settings/cache.ts';
import { CompactionSettings } from '../settings/compaction.ts';
import { Limits } from '../settings/limits.ts';
import { ModelsSettings } from '../settings/models.ts';
import { PromptCacheSettings } from '../settings/prompt-cache.ts';
import { ResponsesSettings } from '../settings/responses.ts';
import { RoutingSettings } from '../settings/routing.ts';

/**
 * A tenant's pipeline settings: one section per stage, each defined beside
 * its stage's needs (settings/), stored as one JSON document in
 * `tenants.settings`. A field left out takes the gateway's default; the
 * control plane's PATCH /api/v1/tenant replaces the sections it is sent.
 */
export const TenantSettings = Type.Object(
  {
    models: Type.Optional(ModelsSettings),
    cache: Type.Optional(CacheSettings),
    routing: Type.Optional(RoutingSettings),
    compaction: Type.Optional(CompactionSettings),
    prompt_cache: Type.Optional(PromptCacheSettings),
    limits: Type.Optional(Limits),
    responses: Type.Optional(ResponsesSettings),
  },
  { additionalProperties: false },
);
export type TenantSettings = Static<typeof TenantSettings>;

const orNull = <T extends Parameters<typeof Type.Union>[0][number]>(section: T) => Type.Optional(Type.Union([section, Type.Null()]));

/** What PATCH /api/v1/tenant takes as `settings`: each section sent replaces the stored one, `null` resets it. */
export const TenantSettingsPatch = Type.Object(
  {
    models: orNull(ModelsSettings),
    cache: orNull(CacheSettings),
    routing: orNull(RoutingSettings),
    compaction: orNull(CompactionSettings),
    prompt_cache: orNull(PromptCacheSettings),
    limits: orNull(Limits),
    responses: orNull(ResponsesSettings),
  },
  { additionalProperties: false },
);
export type TenantSettingsPatch = Static<typeof TenantSettingsPatch>;

/**
 * The stored document, read back. It was validated when written; one that
 * no longer validates (a field removed in a later version) loses only the
 * sections that fail, never the call.
 */
export function parseTenantSettings(json: string): TenantSettings {
  let doc: unknown;
  try {
    doc = JSON.parse(json);
  } catch {
    return {};
  }
  if (typeof doc !== 'object' || doc === null) return {};
  const out: Record<string, unknown> = {};
  for (const [name, schema] of Object.entries(TenantSettings.properties)) {
    const section = (doc as Record<string, unknown>)[name];
    if (section !== undefined && Value.Check(schema, section)) out[name] = section;
  }
  return out as TenantSettings;
}

/** `current` with each section in `changes` replaced (`null` removes a section: back to the defaults). */
export function mergeTenantSettings(current: TenantSettings, changes: TenantSettingsPatch): TenantSettings {
  const out: Record<string, unknown> = { ...current };
  for (const [name, section] of Object.entries(changes)) {
    if (section === null) delete out[name];
    else if (section !== undefined) out[name] = section;
  }
  return out as TenantSettings;
}

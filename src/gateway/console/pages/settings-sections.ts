import type { TSchema } from 'typebox';
import { Value } from 'typebox/value';
import { COMPACT_MODE_TEXT, formatCompactMode } from '../../compaction/mode.ts';
import type { GatewayConfig } from '../../config.ts';
import { promptCacheWanted } from '../../prompt-cache/mode.ts';
import { CacheSettings } from '../../settings/cache.ts';
import { CompactionSettings, DEFAULT_READ_TOOLS, STALE_DEFAULTS } from '../../settings/compaction.ts';
import { PromptCacheSettings } from '../../settings/prompt-cache.ts';
import { RoutingSettings } from '../../settings/routing.ts';
import type { TenantSettings } from '../../control-plane/tenant-settings.ts';
import { field, formText } from '../forms.ts';
import {
  boundsOf,
  bytes,
  chainsText,
  choiceField,
  type FieldErrors,
  type Parsed,
  parseChains,
  parseModelList,
  parseSwitch,
  parseWhole,
  schemaErrors,
  seconds,
  switchField,
  textareaField,
  wholeRange,
} from './settings-fields.ts';

/**
 * The Settings page's pipeline sections other than the budgets (which reuse
 * limits-form.ts): each turns its stored section into form values, draws its
 * fields with the gateway's effective defaults, and parses a posted form
 * back into a section that its own schema (settings/*.ts, the API's) accepts.
 */
export type SectionKey = 'routing' | 'compaction' | 'cache' | 'prompt_cache';

/** The gateway's defaults, read from what applies them (config.ts, the stages), so that the page says what an unset field does here. */
export interface Defaults {
  cacheEnabled: boolean;
  cacheTtlSeconds: number;
  cacheMaxEntryBytes: number;
  compaction: string;
  stickyTtlSeconds: number;
  defaultFallbacks: number;
  promptCache: boolean;
}

export function gatewayDefaults(config: GatewayConfig): Defaults {
  return {
    // ResponseCache.policy(): a tenant's unset cache fields take these.
    cacheEnabled: config.cache.enabled,
    cacheTtlSeconds: config.cache.ttlSeconds,
    cacheMaxEntryBytes: config.cache.maxEntryBytes,
    // The compaction stage: X-Gateway-Compact, else the tenant's default, else this.
    compaction: formatCompactMode(config.compactDefault),
    stickyTtlSeconds: config.routing.stickyTtlMs / 1000,
    defaultFallbacks: config.routing.defaultFallbacks,
    // What the prompt-cache stage decides for a call with a session id and no header, when the tenant sets nothing.
    promptCache: promptCacheWanted({}, {}, 'session'),
  };
}

export interface SectionForm {
  key: SectionKey;
  /** In URLs and element ids. */
  slug: string;
  title: string;
  /** One sentence (HTML) on what the section does. */
  intro: string;
  /** The posted fields, bounded by the route's schema. */
  fields: readonly { name: string; maxLength: number }[];
  schema: TSchema;
  values(stored: TenantSettings): Record<string, string>;
  render(values: Record<string, string>, errors: FieldErrors, d: Defaults): string;
  parse(body: unknown): { ok: true; section: Record<string, unknown> } | { ok: false; errors: FieldErrors };
}

const str = (v: unknown) => (v === undefined ? '' : String(v));
const short = (...names: string[]) => names.map((name) => ({ name, maxLength: 64 }));

/** Collects parsed fields into a section (unset ones left out) and the parsers' errors; then the schema has its say. */
function collect(schema: TSchema, parts: [string, Parsed<unknown>][], fieldOf: (path: string[]) => { name: string; label: string }) {
  const section: Record<string, unknown> = {};
  const errors: FieldErrors = {};
  for (const [name, parsed] of parts) {
    if (!parsed.ok) errors[name] = parsed.error;
    else if (parsed.value !== undefined) section[name] = parsed.value;
  }
  if (Object.keys(errors).length > 0) return { ok: false as const, errors };
  const refused = schemaErrors(schema, section, fieldOf);
  return Object.keys(refused).length > 0 ? { ok: false as const, errors: refused } : { ok: true as const, section };
}

const ok = <T>(value: T | undefined): Parsed<T> => ({ ok: true, value });

// Routing

const TIER_NAMES = { '1': 'light', '2': 'standard', '3': 'frontier' } as const;
const TIERS = ['1', '2', '3'] as const;
const routingProps = RoutingSettings.properties;
const ROUTING_LABELS: Record<string, string> = {
  enabled: 'Route named models too',
  min_tier: 'Lowest tier',
  baseline: 'Baseline model',
  fallbacks: 'Fallback chains',
  default_fallbacks: 'Default fallbacks',
  sticky_ttl_seconds: 'Sticky session time (seconds)',
  ...Object.fromEntries(TIERS.map((t) => [`tiers_${t}`, `Tier ${t} (${TIER_NAMES[t]}) models`])),
};
const routingField = (path: string[]) => {
  const name = path[0] === 'tiers' && path[1] ? `tiers_${path[1]}` : (path[0] ?? 'enabled');
  return { name, label: ROUTING_LABELS[name] ?? name };
};

const routing: SectionForm = {
  key: 'routing',
  slug: 'routing',
  title: 'Routing',
  intro:
    'Which model answers a call. Model <code>auto</code> is always routed: each call is classified into a tier (1 light, 2 standard, 3 frontier) and sent to the cheapest model of that tier your provider keys can call. Retries and fallbacks keep a call alive when a provider fails.',
  fields: [...short('enabled', 'min_tier', 'default_fallbacks', 'sticky_ttl_seconds'), { name: 'baseline', maxLength: 256 }, ...TIERS.map((t) => ({ name: `tiers_${t}`, maxLength: 8192 })), { name: 'fallbacks', maxLength: 60_000 }],
  schema: RoutingSettings,
  values: ({ routing: r = {} }) => ({
    enabled: str(r.enabled),
    min_tier: str(r.min_tier),
    baseline: r.baseline ?? '',
    fallbacks: chainsText(r.fallbacks),
    default_fallbacks: str(r.default_fallbacks),
    sticky_ttl_seconds: str(r.sticky_ttl_seconds),
    ...Object.fromEntries(TIERS.map((t) => [`tiers_${t}`, (r.tiers?.[t] ?? []).join('\n')])),
  }),
  render(v, e, d) {
    const id = (name: string) => `routing-${name.replaceAll('_', '-')}`;
    const maxModels = boundsOf(routingProps.tiers.properties['1']).maxItems;
    const chains = routingProps.fallbacks as unknown as { patternProperties: Record<string, unknown> };
    const maxChain = boundsOf(Object.values(chains.patternProperties)[0]).maxItems;
    const fallbacksDefault =
      d.defaultFallbacks === 0
        ? 'off on this gateway (GATEWAY_DEFAULT_FALLBACKS=0)'
        : `on: up to ${d.defaultFallbacks} other models of the same tier or above, other providers first`;
    return [
      switchField({ id: id('enabled'), name: 'enabled', label: ROUTING_LABELS['enabled']!, value: v['enabled'] ?? '', error: e['enabled'], defaultOn: false, defaultNote: 'off: only auto is routed', hint: 'On: a named catalog model may be replaced by a cheaper one that meets the tier the call needs, never by a dearer one. X-Gateway-No-Route: true still calls exactly the model named.' }),
      choiceField({
        id: id('min_tier'),
        name: 'min_tier',
        label: ROUTING_LABELS['min_tier']!,
        value: v['min_tier'] ?? '',
        error: e['min_tier'],
        hint: 'No call is routed below this tier (the classifier can misjudge a short prompt).',
        options: [{ value: '', label: 'Gateway default (1, light)' }, ...TIERS.map((t) => ({ value: t, label: `${t}, ${TIER_NAMES[t]}` }))],
      }),
      `<fieldset><legend>Models per tier (optional)</legend><p class="hint">One <code>provider/model</code> per line, at most ${maxModels} per tier. All empty: the catalog’s tiers, for every provider you have a key for. Once any tier lists models, only listed models are routed to; a call needing tier n goes to the cheapest fit listed under n or above.</p>${TIERS.map((t) => textareaField({ id: id(`tiers_${t}`), name: `tiers_${t}`, label: ROUTING_LABELS[`tiers_${t}`]!, value: v[`tiers_${t}`] ?? '', error: e[`tiers_${t}`] })).join('')}</fieldset>`,
      field({ id: id('baseline'), name: 'baseline', label: ROUTING_LABELS['baseline']!, value: v['baseline'] ?? '', error: e['baseline'], maxlength: 256, autocomplete: 'off', hint: 'What the saving of model auto is measured against, as provider/model. Empty: the cheapest model of the highest tier your providers serve.' }),
      textareaField({ id: id('fallbacks'), name: 'fallbacks', label: ROUTING_LABELS['fallbacks']!, value: v['fallbacks'] ?? '', error: e['fallbacks'], rows: 4, hint: `One chain per line: the model (provider/model, or as clients name it, auto included), a colon, then up to ${maxChain} fallbacks, e.g. "openai/gpt-4o: anthropic/claude-sonnet-4-5, openai/gpt-4.1". A model with nothing after its colon has no fallbacks.` }),
      switchField({ id: id('default_fallbacks'), name: 'default_fallbacks', label: ROUTING_LABELS['default_fallbacks']!, value: v['default_fallbacks'] ?? '', error: e['default_fallbacks'], defaultOn: d.defaultFallbacks > 0, defaultNote: d.defaultFallbacks > 0 ? 'on' : 'off on this gateway', hint: `Where no chain above applies, fall back along the gateway’s default chain. Default: ${fallbacksDefault}.` }),
      field({ id: id('sticky_ttl_seconds'), name: 'sticky_ttl_seconds', label: ROUTING_LABELS['sticky_ttl_seconds']!, value: v['sticky_ttl_seconds'] ?? '', error: e['sticky_ttl_seconds'], inputmode: 'numeric', maxlength: 16, autocomplete: 'off', hint: `How long a conversation (X-Gateway-Session-Id) keeps its routed model after its last call, so its provider prompt cache stays warm. ${capitalize(wholeRange(routingProps.sticky_ttl_seconds))}; empty: the gateway’s default, ${seconds(d.stickyTtlSeconds)}.` }),
    ].join('');
  },
  parse(body) {
    const tiers: Record<string, string[]> = {};
    for (const t of TIERS) {
      const list = parseModelList(body, `tiers_${t}`);
      if (list) tiers[t] = list;
    }
    const baseline = formText(body, 'baseline').trim();
    return collect(
      RoutingSettings,
      [
        ['enabled', parseSwitch(body, 'enabled', ROUTING_LABELS['enabled']!)],
        ['min_tier', parseWhole(body, 'min_tier', ROUTING_LABELS['min_tier']!, routingProps.min_tier)],
        ['tiers', ok(Object.keys(tiers).length > 0 ? tiers : undefined)],
        ['baseline', ok(baseline === '' ? undefined : baseline)],
        ['fallbacks', parseChains(body, 'fallbacks')],
        ['default_fallbacks', parseSwitch(body, 'default_fallbacks', ROUTING_LABELS['default_fallbacks']!)],
        ['sticky_ttl_seconds', parseWhole(body, 'sticky_ttl_seconds', ROUTING_LABELS['sticky_ttl_seconds']!, routingProps.sticky_ttl_seconds)],
      ],
      routingField,
    );
  },
};

// Compaction

const BUDGET_TEXT = COMPACT_MODE_TEXT.slice(COMPACT_MODE_TEXT.indexOf('a token budget'));
const MODES = ['off', 'safe', 'agent', 'aggressive'] as const;
const compactionProps = CompactionSettings.properties;
const STALE_FIELDS = [
  ['stale_trigger_tokens', 'Clear old tool results past (prompt tokens)', STALE_DEFAULTS.triggerTokens, 'Agent and above: once the prompt is larger, the oldest tool results are replaced by a note naming the call.'],
  ['stale_keep_results', 'Most recent tool results always kept', STALE_DEFAULTS.keepResults, 'Never cleared, nor anything in the exchange the model is answering now.'],
  ['stale_batch_tokens', 'Clear at least (tokens at a time)', STALE_DEFAULTS.batchTokens, 'Results are cleared in blocks of at least this many tokens, so the provider’s prompt cache is broken rarely.'],
] as const;

const compaction: SectionForm = {
  key: 'compaction',
  slug: 'compaction',
  title: 'Compaction',
  intro:
    'Makes prompts smaller before they are sent: formatting nobody sees, repeated tool outputs, the middle of very long logs, and under a token budget the oldest turns. The system prompt, tool definitions and your users’ words are never touched. A call’s X-Gateway-Compact header overrides this default.',
  fields: [...short('mode', 'budget', ...STALE_FIELDS.map(([name]) => name)), { name: 'read_tools', maxLength: 64 * 66 }],
  schema: CompactionSettings,
  values: ({ compaction: c = {} }) => {
    const stored = c.default;
    const knobs = {
      read_tools: c.read_tools?.join('\n') ?? '',
      stale_trigger_tokens: str(c.stale_trigger_tokens),
      stale_keep_results: str(c.stale_keep_results),
      stale_batch_tokens: str(c.stale_batch_tokens),
    };
    if (stored === undefined) return { mode: '', budget: '', ...knobs };
    return (MODES as readonly string[]).includes(stored) ? { mode: stored, budget: '', ...knobs } : { mode: 'budget', budget: stored, ...knobs };
  },
  render(v, e, d) {
    return [
      choiceField({
        id: 'compaction-mode',
        name: 'mode',
        label: 'Default mode',
        value: v['mode'] ?? '',
        error: e['mode'],
        hint: 'off: the body goes upstream as sent. safe: whitespace normalized, exact repeats and superseded file reads replaced by a reference. agent: safe, and past a prompt size the oldest tool results cleared in batches (recommended for agents). aggressive: agent, and long tool outputs cut to their head and tail. Token budget: aggressive, and the oldest middle turns dropped until the prompt fits. The exchange the model is answering now is never changed.',
        options: [
          { value: '', label: `Gateway default (${d.compaction})` },
          ...MODES.map((m) => ({ value: m, label: m })),
          { value: 'budget', label: 'Token budget' },
        ],
      }),
      field({ id: 'compaction-budget', name: 'budget', label: 'Token budget', value: v['budget'] ?? '', error: e['budget'], inputmode: 'numeric', maxlength: 16, autocomplete: 'off', hint: `With the mode “Token budget”: ${BUDGET_TEXT}. A prompt that cannot be made to fit is refused (400) before anything is sent.` }),
      textareaField({ id: 'compaction-read-tools', name: 'read_tools', label: 'Read tools', value: v['read_tools'] ?? '', error: e['read_tools'], rows: 3, hint: `Tools whose results are file reads (an earlier read superseded by a later one is replaced by a reference), one per line, up to 64 names of up to 64 characters. Empty: ${DEFAULT_READ_TOOLS.join(', ')}.` }),
      ...STALE_FIELDS.map(([name, label, fallback, hint]) =>
        field({ id: `compaction-${name.replaceAll('_', '-')}`, name, label, value: v[name] ?? '', error: e[name], inputmode: 'numeric', maxlength: 16, autocomplete: 'off', hint: `${hint} ${capitalize(wholeRange(compactionProps[name]))}; empty: the gateway’s default, ${fallback.toLocaleString('en-US')}.` }),
      ),
    ].join('');
  },
  parse(body): ReturnType<SectionForm['parse']> {
    const mode = formText(body, 'mode');
    const budget = formText(body, 'budget').trim().replaceAll(',', '');
    if (mode !== 'budget' && budget !== '') return { ok: false, errors: { budget: 'Choose the mode “Token budget” to use a budget, or empty this field.' } };
    if (mode === 'budget' && budget === '') return { ok: false, errors: { budget: `Enter ${BUDGET_TEXT}.` } };
    if (mode !== '' && mode !== 'budget' && !(MODES as readonly string[]).includes(mode)) return { ok: false, errors: { mode: 'Choose one of the modes listed.' } };
    const section: Record<string, unknown> = mode === '' ? {} : { default: mode === 'budget' ? budget : mode };
    if (!Value.Check(CompactionSettings, section)) return { ok: false, errors: { budget: `Enter ${BUDGET_TEXT}.` } };
    const readTools = formText(body, 'read_tools').split(/\s+/).filter((t) => t !== '');
    if (readTools.length > 0) {
      if (!Value.Check(compactionProps.read_tools, readTools)) return { ok: false, errors: { read_tools: 'Name at most 64 tools, each of at most 64 characters.' } };
      section['read_tools'] = readTools;
    }
    const errors: FieldErrors = {};
    for (const [name, label] of STALE_FIELDS) {
      const parsed = parseWhole(body, name, label, compactionProps[name]);
      if (!parsed.ok) errors[name] = parsed.error;
      else if (parsed.value !== undefined) section[name] = parsed.value;
    }
    if (Object.keys(errors).length > 0) return { ok: false, errors };
    return { ok: true, section };
  },
};

// Response cache

const cacheProps = CacheSettings.properties;
const CACHE_LABELS: Record<string, string> = {
  enabled: 'Response cache',
  ttl_seconds: 'Time to live (seconds)',
  max_entry_bytes: 'Largest answer stored (bytes)',
  dedup: 'Join identical calls in flight',
};

const cache: SectionForm = {
  key: 'cache',
  slug: 'cache',
  title: 'Response cache',
  intro:
    'Answers a request identical to an earlier one (same model, same messages and parameters) from the cache, at no cost, and lets identical requests arriving together share one upstream call. A call’s X-Gateway-No-Cache: true skips both.',
  fields: short('enabled', 'ttl_seconds', 'max_entry_bytes', 'dedup'),
  schema: CacheSettings,
  values: ({ cache: c = {} }) => ({ enabled: str(c.enabled), ttl_seconds: str(c.ttl_seconds), max_entry_bytes: str(c.max_entry_bytes), dedup: str(c.dedup) }),
  render(v, e, d) {
    return [
      switchField({ id: 'cache-enabled', name: 'enabled', label: CACHE_LABELS['enabled']!, value: v['enabled'] ?? '', error: e['enabled'], defaultOn: d.cacheEnabled, hint: 'Off turns off both the cache and the joining of identical calls. A request without temperature is cached like any other: turn the cache off, or send X-Gateway-No-Cache, where varied answers are wanted.' }),
      field({ id: 'cache-ttl-seconds', name: 'ttl_seconds', label: CACHE_LABELS['ttl_seconds']!, value: v['ttl_seconds'] ?? '', error: e['ttl_seconds'], inputmode: 'numeric', maxlength: 16, autocomplete: 'off', hint: `How long an answer is reused; lowering it applies to answers already stored. ${capitalize(wholeRange(cacheProps.ttl_seconds))}; empty: the gateway’s default, ${seconds(d.cacheTtlSeconds)}.` }),
      field({ id: 'cache-max-entry-bytes', name: 'max_entry_bytes', label: CACHE_LABELS['max_entry_bytes']!, value: v['max_entry_bytes'] ?? '', error: e['max_entry_bytes'], inputmode: 'numeric', maxlength: 16, autocomplete: 'off', hint: `A larger answer is served but not stored; never above the gateway’s own limit. ${capitalize(wholeRange(cacheProps.max_entry_bytes))}; empty: the gateway’s limit, ${bytes(d.cacheMaxEntryBytes)}.` }),
      switchField({ id: 'cache-dedup', name: 'dedup', label: CACHE_LABELS['dedup']!, value: v['dedup'] ?? '', error: e['dedup'], defaultOn: true, defaultNote: 'on while the cache is on', hint: 'Identical requests arriving while the first is still upstream wait for its answer instead of calling the provider again.' }),
    ].join('');
  },
  parse: (body) =>
    collect(
      CacheSettings,
      [
        ['enabled', parseSwitch(body, 'enabled', CACHE_LABELS['enabled']!)],
        ['ttl_seconds', parseWhole(body, 'ttl_seconds', CACHE_LABELS['ttl_seconds']!, cacheProps.ttl_seconds)],
        ['max_entry_bytes', parseWhole(body, 'max_entry_bytes', CACHE_LABELS['max_entry_bytes']!, cacheProps.max_entry_bytes)],
        ['dedup', parseSwitch(body, 'dedup', CACHE_LABELS['dedup']!)],
      ],
      (path) => ({ name: path[0] ?? 'enabled', label: CACHE_LABELS[path[0] ?? 'enabled'] ?? 'Cache' }),
    ),
};

// Provider prompt caching

const promptCache: SectionForm = {
  key: 'prompt_cache',
  slug: 'prompt-cache',
  title: 'Provider prompt caching',
  intro:
    'Providers bill a prompt prefix they have cached far below the input price. For calls carrying X-Gateway-Session-Id, the gateway asks for it: Anthropic cache breakpoints, OpenAI’s prompt_cache_key. A call’s X-Gateway-Prompt-Cache: on or off overrides this.',
  fields: short('enabled'),
  schema: PromptCacheSettings,
  values: ({ prompt_cache: p = {} }) => ({ enabled: str(p.enabled) }),
  render: (v, e, d) =>
    switchField({ id: 'prompt-cache-enabled', name: 'enabled', label: 'Prompt-cache hints for conversations', value: v['enabled'] ?? '', error: e['enabled'], defaultOn: d.promptCache, hint: 'Calls without a session id get no hints unless they send X-Gateway-Prompt-Cache: on (a breakpoint on a prompt nobody sends again only pays Anthropic’s write premium).' }),
  parse: (body) => collect(PromptCacheSettings, [['enabled', parseSwitch(body, 'enabled', 'Prompt-cache hints')]], () => ({ name: 'enabled', label: 'Prompt-cache hints' })),
};

/** In the order the page shows them (the pipeline's order). */
export const SECTIONS: readonly SectionForm[] = [routing, compaction, cache, promptCache];

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}


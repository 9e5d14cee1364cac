import type { Kysely } from 'kysely';
import type { OutboxTable } from '../platform/mail.ts';

/**
 * Every table of the gateway. Times are epoch milliseconds; money is USD as
 * double precision (sums of per-call costs, never compared for equality).
 * Bearer secrets (sessions, magic links, API keys) are stored only as their
 * SHA-256 (base64url, platform/crypto.ts `sha256`).
 */
export interface GatewayTables {
  /**
   * A workspace. `email` is the address it holds, lower-cased, unique: the
   * address sign-ins reach (workspace-ownership.ts). NULL once released: the
   * address was proven by someone else while this workspace had not
   * confirmed it, or its confirmation link expired before another sign-up.
   */
  tenants: {
    id: string;
    name: string;
    email: string | null;
    /** 1: prompt and completion bodies are kept in usage_records (off by default). */
    store_bodies: number;
    /** JSON: the tenant's pipeline settings (tenant-settings.ts), `{}` for every default. */
    settings: string;
    created_at: number;
    /** When the address was proven for this workspace (its confirmation link, a sign-in that created it, an operator's invitation); null: unconfirmed. */
    email_confirmed_at: number | null;
    /** SHA-256 of the live `gwc_` confirmation link (address-confirmation.ts), kept after use so a second click is answered; null when none was sent. */
    confirmation_hash: string | null;
    confirmation_expires_at: number | null;
    /** The address a released workspace held (shown as its address), and when it was released. */
    released_email: string | null;
    released_at: number | null;
  };
  /** Control-plane sessions (`gws_` bearer tokens). */
  gateway_sessions: {
    token_hash: string;
    tenant_id: string;
    created_at: number;
    expires_at: number;
    /**
     * A console session opened through the account service: that sign-in's
     * refresh token, sealed (AES-256-GCM, associated data naming this row),
     * rechecked there every GATEWAY_ACCOUNTS_SESSION_CHECK_SECONDS
     * (accounts-session-grants.ts); null for every other session.
     */
    accounts_grant: string | null;
    /** When the grant was last checked (or its check claimed by a replica). */
    accounts_checked_at: number | null;
  };
  /** Single-use sign-in links (`gwm_` tokens), valid 15 minutes. */
  magic_links: {
    token_hash: string;
    /** The workspace that held the address when the link was sent. */
    tenant_id: string;
    /** The address the link was sent to, which following it proves (null for links sent before migration 0008). */
    email: string | null;
    created_at: number;
    expires_at: number;
    used_at: number | null;
  };
  /** Data-plane keys (`sk-gw-` + 32 random bytes base64url). `prefix` is a short display form, never enough to use. */
  api_keys: {
    id: string;
    tenant_id: string;
    name: string;
    key_hash: string;
    prefix: string;
    created_at: number;
    last_used_at: number | null;
    revoked_at: number | null;
    /** JSON: this key's own limits (requests per minute, tokens per day, USD per month), `{}` for none. */
    limits: string;
  };
  /**
   * One key per provider per tenant. `key_sealed` is AES-256-GCM
   * (platform/crypto.ts `encrypt`) under GATEWAY_ENCRYPTION_KEY with the
   * associated data {@link providerKeyAad}.
   */
  provider_keys: {
    tenant_id: string;
    provider: string;
    key_sealed: string;
    key_last4: string;
    base_url: string | null;
    created_at: number;
  };
  /** One row per data-plane call, written in batches off the hot path. */
  usage_records: UsageRecordRow;
  /**
   * Usage records summed per tenant and hour, and per tenant and day
   * (usage-rollups.ts), kept by the usage writer in the transaction that
   * inserts the records: the figures of the usage API and of the console's
   * Overview and Usage pages. Three sets of labels (none; key, model and
   * tag; those and the session); a label a record lacks is '' here (tags,
   * sessions and models are never empty).
   */
  usage_rollup_tenant: UsageRollupKey & UsageMeasures;
  usage_rollup_labels: UsageRollupKey & UsageRollupLabels & UsageMeasures;
  usage_rollup_labels_daily: UsageRollupDayKey & UsageRollupLabels & UsageMeasures;
  usage_rollup_sessions: UsageRollupKey & UsageRollupLabels & { session_id: string } & UsageMeasures;
  usage_rollup_sessions_daily: UsageRollupDayKey & UsageRollupLabels & { session_id: string } & UsageMeasures;
  /** How many calls fell in each latency bucket (usage-rollups.ts `latencyBucket`), total and overhead. */
  usage_rollup_latency: UsageRollupKey & UsageLatencyCounts;
  usage_rollup_latency_daily: UsageRollupDayKey & UsageLatencyCounts;
  outbox: OutboxTable;
  job_runs: { name: string; last_run_at: number };
  /**
   * Bytes of stored bodies (usage_records.request_body and response_body,
   * UTF-8) per tenant and day (`floor(created_at / 86400000)`), kept by the
   * usage writer in the transaction that inserts the records and purged with
   * them: a tenant's stored-body quota is the sum over its days within the
   * retention (stored-body-bytes.ts).
   */
  stored_body_bytes: { tenant_id: string; day: number; bytes: number };
  /**
   * Responses kept for the Responses API (`store: true`, its default;
   * surfaces/responses/store.ts), one per (tenant, id): `sealed` holds the
   * turn's input items and the response object as JSON, AES-256-GCM under
   * GATEWAY_ENCRYPTION_KEY with the associated data `storedResponseAad`
   * (store.ts), so a row moved to another tenant or id does not open.
   * `previous_id` chains a conversation (`previous_response_id`), `bytes` is
   * the sealed text's length (counted in the tenant's storage quota), and
   * the row is gone for every reader once `expires_at` has passed (the
   * purge then deletes it).
   */
  stored_responses: {
    tenant_id: string;
    id: string;
    previous_id: string | null;
    created_at: number;
    expires_at: number;
    bytes: number;
    sealed: string;
  };
}

export interface UsageRecordRow {
  request_id: string;
  tenant_id: string;
  key_id: string;
  session_id: string | null;
  tag: string | null;
  model_requested: string;
  /** `provider/model` that answered; null when no provider was reached. */
  model_used: string | null;
  provider: string | null;
  /** HTTP status sent to the client. */
  status: number;
  /** Stable error code when the call failed (ours or the provider's). */
  error_code: string | null;
  stream: number;
  prompt_tokens: number;
  cached_tokens: number;
  cache_write_tokens: number;
  completion_tokens: number;
  reasoning_tokens: number;
  saved_tokens: number;
  cost_usd: number;
  /** The gateway's saving: saved_cache_usd + saved_compaction_usd + saved_routing_usd + saved_prompt_cache_usd (not saved_provider_cache_usd). */
  cost_saved_usd: number;
  /** A cache hit or a dedup: the whole cost of the answer reused. */
  saved_cache_usd: number;
  /** Prompt tokens compaction removed, at the answering model's input price. */
  saved_compaction_usd: number;
  /** The requested (or routing's baseline) model's cost of this usage minus the cost of the model that answered. */
  saved_routing_usd: number;
  /** What the prompt-cache breakpoints the gateway added earned: reads at the cached price instead of the input price, less the premium paid for writes. */
  saved_prompt_cache_usd: number;
  /**
   * What the provider's own prompt caching saved that the gateway does not
   * claim (automatic caching, reads at breakpoints the client placed), net of
   * any write premium (so possibly negative). Not in cost_saved_usd: reported
   * beside the gateway's saving. 0 for records before migration 0011.
   */
  saved_provider_cache_usd: number;
  /** Prompt tokens removed by compaction (within saved_tokens). */
  compaction_saved_tokens: number;
  /** Why routing chose the model (X-Gateway-Route-Reason); null when the named model was called. */
  route_reason: string | null;
  /** JSON array of the upstream attempts ({model, status, error_code, ms}); null when there was at most one. */
  attempts: string | null;
  /** miss | hit | dedup | bypass */
  cache_status: string;
  /** none, or what compaction did */
  compaction: string;
  overhead_ms: number;
  upstream_ms: number;
  created_at: number;
  /** Only when the tenant turned body storage on. */
  request_body: string | null;
  response_body: string | null;
  /**
   * Null when the token counts are the provider's own and nothing was left out. Else, comma-separated:
   * `clamped` (the provider reported a count that was not a whole number
   * from 0 to 10^9, such as 1e308, -1 or "12": it was clamped), `estimated`
   * (the provider's final usage never came, a stream cut short: the counts
   * are the gateway's, the completion counted from the deltas relayed);
   * `reasoning_dropped` (a Responses call translated for another provider
   * left out reasoning items that provider cannot take).
   */
  usage_flags: string | null;
  /**
   * What became of the bodies when the tenant stores them (null: it did not):
   * `stored`; `request_truncated` and/or `response_truncated` (comma-separated:
   * cut at GATEWAY_STORED_BODY_MAX_BYTES); `quota_full` or `not_sent` (none kept).
   */
  body_storage: string | null;
  /** The inbound API the call came through: `chat.completions`, `messages` or `embeddings` (surfaces/); every record before migration 0012 is `chat.completions`. */
  surface: string;
}

/** A rollup row's tenant and hour (`floor(created_at / 3600000)`: hours since the epoch, UTC). */
export interface UsageRollupKey {
  tenant_id: string;
  hour: number;
}

/** A daily rollup row's tenant and day (`floor(created_at / 86400000)`: days since the epoch, UTC). */
export interface UsageRollupDayKey {
  tenant_id: string;
  day: number;
}

export interface UsageLatencyCounts {
  bucket: number;
  /** Calls whose overhead_ms + upstream_ms fell in the bucket. */
  total_calls: number;
  /** Calls whose overhead_ms fell in the bucket. */
  overhead_calls: number;
}

export interface UsageRollupLabels {
  key_id: string;
  model_requested: string;
  /** '' when no provider answered. */
  model_used: string;
  /** '' for records without a tag. */
  tag: string;
}

/** Sums over the usage records a rollup row counts (all stored as double precision: counts and tokens exact to 2^53). */
export interface UsageMeasures {
  requests: number;
  /** Calls answered with a status of 400 or more. */
  errors: number;
  prompt_tokens: number;
  completion_tokens: number;
  saved_tokens: number;
  cost_usd: number;
  cost_saved_usd: number;
  /** saved_cache_usd of cache hits only. */
  saved_cache_usd: number;
  /** saved_cache_usd of in-flight dedups. */
  saved_dedup_usd: number;
  saved_compaction_usd: number;
  saved_routing_usd: number;
  saved_prompt_cache_usd: number;
  /** The provider's own caching: not in cost_saved_usd. */
  saved_provider_cache_usd: number;
  cache_hits: number;
  dedup_hits: number;
  cache_misses: number;
}

/** Associated data binding a sealed provider key to its tenant and provider: a sealed key moved to another row no longer opens. */
export function providerKeyAad(tenantId: string, provider: string): string {
  return `provider-key:${tenantId}:${provider}`;
}

export type GatewayDb = Kysely<GatewayTables>;

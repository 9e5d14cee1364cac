import { join } from 'node:path';
import { devSecret, EnvReader, parseKey, parsePreviousKeys, type RateSetting } from '../platform/config.ts';
import { readSharedSettings, type SharedSettings } from '../platform/settings.ts';
import { parseTrustProxy, type TrustProxy } from '../platform/trust-proxy.ts';
import { COMPACT_MODE_TEXT, type CompactMode, parseCompactMode } from './compaction/mode.ts';

export type SignupMode = 'open' | 'closed' | 'token';

/**
 * Which private upstreams a provider key's base_url may reach: none (every
 * address must be public), all (`true`), or the listed hosts and CIDR ranges.
 */
export type PrivateUpstreams = { kind: 'none' } | { kind: 'all' } | { kind: 'list'; hosts: string[]; cidrs: string[] };

/** The shared settings (production, dataDir, logLevel, redisUrl, smtp, mail) and the gateway's own. */
export interface GatewayConfig extends SharedSettings {
  host: string;
  port: number;
  baseUrl: string;
  databaseUrl: string | undefined;
  sqlitePath: string;
  /** AES-256-GCM key sealing provider keys (and outbox bodies) at rest. */
  encryptionKey: Buffer;
  /** GATEWAY_ENCRYPTION_KEY_PREVIOUS: keys being retired; what they sealed still opens, until `npm run rotate-keys` reseals it. */
  previousEncryptionKeys: Buffer[];
  signup: SignupMode;
  /** Required when signup is `token`: POST /api/v1/signup must carry it as `Authorization: Bearer`… see docs/configuration.md. */
  adminToken: string | undefined;
  /** Template with `{token}`; undefined: the gateway's own /auth/magic-link page. */
  magicLinkUrl: string | undefined;
  /** The console's "Sign in with your account" (GATEWAY_ACCOUNTS_*): the account service as an OAuth client of it; undefined: off. */
  accounts: AccountsSignIn | undefined;
  magicLinkTtlMs: number;
  sessionTtlMs: number;
  /** GATEWAY_CONFIRM_TTL_HOURS: how long an API sign-up's confirmation link works (and holds the address against another sign-up). */
  confirmTtlMs: number;
  /** GATEWAY_ACCOUNTS_SESSION_CHECK_SECONDS: how often a console session opened through the account service rechecks its grant there. */
  accountsSessionCheckMs: number;
  limits: {
    signup: RateSetting;
    magicLink: RateSetting;
    magicLinkPerEmail: RateSetting;
    verify: RateSetting;
    /** Per workspace: API keys created. */
    apiKeyCreate: RateSetting;
    /** Per workspace: provider keys stored or tested (each resolves a host or calls the provider). */
    providerKeys: RateSetting;
  };
  /** Live (unrevoked) API keys a workspace may hold. */
  maxApiKeysPerTenant: number;
  trustProxy: TrustProxy;
  /** Control-plane JSON bodies. */
  controlBodyLimit: number;
  /** Data-plane bodies (agent transcripts and base64 images are large): over it, 413 in the OpenAI shape. */
  bodyLimit: number;
  /** Prompt compaction when neither X-Gateway-Compact nor the tenant's setting names one (docs/gateway-compaction.md). */
  compactDefault: CompactMode;
  upstream: {
    connectTimeoutMs: number;
    /** Until the response headers arrive (a non-streamed answer is entirely within it). */
    firstByteTimeoutMs: number;
    /** Longest silence between two chunks of a body. */
    idleTimeoutMs: number;
    /** Keep-alive connections per upstream origin. */
    connections: number;
    /** GATEWAY_UPSTREAM_CONNECTIONS_PER_TENANT: a tenant's calls in flight to one origin (at most `connections`); past it, its calls wait in its own queue. */
    connectionsPerTenant: number;
    /** Largest non-streamed answer read (GATEWAY_UPSTREAM_MAX_RESPONSE_BYTES); past it, 502 upstream_response_too_large. */
    maxResponseBytes: number;
  };
  allowPrivateUpstreams: PrivateUpstreams;
  /** GATEWAY_TENANT_CONCURRENCY: a tenant's calls in progress on one replica; past it, 429 concurrency_limited at once. */
  tenantConcurrency: number;
  /** Retries, fallbacks, circuit breakers and sticky routes (docs/gateway-routing.md). */
  routing: RoutingConfig;
  /** Anthropic requires max_tokens; sent when the client gave neither max_tokens nor max_completion_tokens. */
  anthropicDefaultMaxTokens: number;
  /** retentionMs: usage records (and any stored bodies) older than this are purged. */
  /** journalDir: where records wait on disk until written (undefined: GATEWAY_USAGE_JOURNAL_DIR=off). */
  usage: { flushMs: number; batchSize: number; retentionMs: number; journalDir: string | undefined };
  /** Bodies kept for tenants that store them (stored-bodies.ts): each capped at maxBytes, a tenant's together at quotaBytes. */
  storedBodies: { maxBytes: number; quotaBytes: number };
  purgeIntervalMs: number;
  /** Budgets and limits (docs/gateway-budgets.md): output tokens reserved when a call names no max_tokens; how long a reservation outlives a replica that died holding it. */
  budgets: { defaultOutputTokens: number; reservationTtlMs: number };
  /** The response cache and in-flight dedup (docs/gateway-cache.md); a tenant's settings.cache overrides enabled and ttl. */
  cache: {
    enabled: boolean;
    ttlSeconds: number;
    /** The in-process LRU's bound (entries are counted by their stored size). */
    maxBytes: number;
    /** GATEWAY_CACHE_TENANT_SHARE_PERCENT: the most of maxBytes one tenant's entries may hold (in-process store). */
    tenantSharePercent: number;
    /** A larger answer is served but not stored (both stores). */
    maxEntryBytes: number;
    /** With Redis: how long a leader's lock lives without renewal; followers on other replicas give up on a leader silent this long. */
    dedupLeaseMs: number;
  };
}

/** The account service's OAuth server, and the gateway's confidential client there. */
export interface AccountsSignIn {
  /** GATEWAY_ACCOUNTS_URL: the account service's public URL, its OAuth issuer (RFC 8414). */
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** GATEWAY_BASE_URL + ACCOUNTS_CALLBACK_PATH: must be listed in the account service's OAUTH_CLIENT_REDIRECT_URIS. */
  redirectUri: string;
}

/** Where the account service sends the browser back (console/account-sign-in.ts). */
export const ACCOUNTS_CALLBACK_PATH = '/sign-in/account/callback';

export interface RoutingConfig {
  /** Retries of one model after a 429, 408, 5xx or timeout, before its fallbacks. */
  retries: number;
  /** First backoff delay; each retry doubles it (with full jitter). */
  retryBaseDelayMs: number;
  /** Longest wait before a retry, Retry-After included: a provider asking for longer is left for the fallbacks. */
  retryMaxDelayMs: number;
  /** Length of the default fallback chain (0: no fallback unless a tenant configures one). */
  defaultFallbacks: number;
  /** Consecutive failures that open a provider's circuit. */
  breakerFailures: number;
  /** How long an open circuit skips its provider before one probe call is let through. */
  breakerCooldownMs: number;
  /** Distinct tenants whose failures it takes to open a provider origin's shared circuit. */
  breakerSharedTenants: number;
  /** The failures that open a shared circuit fall within this long. */
  breakerSharedWindowMs: number;
  /** How long a session keeps its routed model after its last call (a tenant may set its own). */
  stickyTtlMs: number;
  /** GATEWAY_STICKY_SESSIONS: sessions remembered per replica without Redis (the least recently used go first). */
  stickySessions: number;
  /** GATEWAY_STICKY_SESSIONS_PER_TENANT: the most of them one tenant may hold (past it, its own oldest go). */
  stickySessionsPerTenant: number;
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** Reads the gateway's settings; throws ConfigError listing every problem. */
export function loadGatewayConfig(env: Record<string, string | undefined> = process.env): GatewayConfig {
  const r = new EnvReader(env);
  const shared = readSharedSettings(r, { prefix: 'GATEWAY', defaultFrom: 'AI Gateway <no-reply@localhost>', mailCarries: 'sign-in links' });
  const { production, dataDir } = shared;
  const why = 'when NODE_ENV=production';
  const port = r.int('GATEWAY_PORT', 8081, 0, 65535);

  const encryptionKeyText = production
    ? r.require('GATEWAY_ENCRYPTION_KEY', `${why} (it seals the tenants' provider keys at rest)`)
    : r.string('GATEWAY_ENCRYPTION_KEY');
  const encryptionKey = encryptionKeyText ? parseKey(encryptionKeyText) : undefined;
  if (encryptionKeyText && !encryptionKey) {
    r.problems.push('GATEWAY_ENCRYPTION_KEY must be 32 bytes written as 64 hex digits or 43 base64url characters (e.g. `openssl rand -hex 32`)');
  }
  const previousEncryptionKeys = parsePreviousKeys(r, 'GATEWAY_ENCRYPTION_KEY', encryptionKey);
  const baseUrl = production ? r.url('GATEWAY_BASE_URL') : r.url('GATEWAY_BASE_URL', `http://localhost:${port}`);
  if (production && !baseUrl) r.problems.push(`GATEWAY_BASE_URL is required ${why} (the public URL used in sign-in links)`);

  const signupText = (r.string('GATEWAY_SIGNUP') ?? 'open').toLowerCase();
  if (!['open', 'closed', 'token'].includes(signupText)) r.problems.push(`GATEWAY_SIGNUP must be open, closed or token (got "${signupText}")`);
  const signup = (['open', 'closed', 'token'].includes(signupText) ? signupText : 'open') as SignupMode;
  const adminToken = r.string('GATEWAY_ADMIN_TOKEN');
  if (signup === 'token' && !adminToken) r.problems.push('GATEWAY_ADMIN_TOKEN is required when GATEWAY_SIGNUP=token');
  if (adminToken && adminToken.length < 32) r.problems.push('GATEWAY_ADMIN_TOKEN must be at least 32 characters');
  const magicLinkUrl = r.string('GATEWAY_MAGIC_LINK_URL');
  if (magicLinkUrl && !magicLinkUrl.includes('{token}')) r.problems.push('GATEWAY_MAGIC_LINK_URL must contain {token}');
  const accounts = readAccountsSignIn(r, baseUrl, production);
  const trustProxy = parseTrustProxy('GATEWAY_TRUST_PROXY', r.string('GATEWAY_TRUST_PROXY'));
  if ('problem' in trustProxy) r.problems.push(trustProxy.problem);
  const allowPrivateUpstreams = parsePrivateUpstreams(r.string('GATEWAY_ALLOW_PRIVATE_UPSTREAMS'), r.problems);
  // A share's default is never more than the whole it is a share of (an operator lowering the whole need not lower it too).
  const connections = r.int('GATEWAY_UPSTREAM_CONNECTIONS', 128, 1, 10_000);
  const stickySessions = r.int('GATEWAY_STICKY_SESSIONS', 100_000, 1, 10_000_000);
  const compactDefault = parseCompactMode(r.string('GATEWAY_COMPACT_DEFAULT') ?? 'off');
  if (!compactDefault) r.problems.push(`GATEWAY_COMPACT_DEFAULT must be ${COMPACT_MODE_TEXT}`);

  const config: GatewayConfig = {
    ...shared,
    host: r.string('GATEWAY_HOST') ?? (production ? '0.0.0.0' : '127.0.0.1'),
    port,
    baseUrl: baseUrl ?? '',
    databaseUrl: r.string('GATEWAY_DATABASE_URL'),
    sqlitePath: join(dataDir, 'gateway.sqlite'),
    encryptionKey: encryptionKey ?? Buffer.alloc(0),
    previousEncryptionKeys,
    signup,
    adminToken,
    magicLinkUrl,
    accounts,
    magicLinkTtlMs: 15 * MINUTE,
    sessionTtlMs: r.int('GATEWAY_SESSION_TTL_DAYS', 30, 1, 365) * DAY,
    confirmTtlMs: r.int('GATEWAY_CONFIRM_TTL_HOURS', 24, 1, 168) * HOUR,
    accountsSessionCheckMs: r.int('GATEWAY_ACCOUNTS_SESSION_CHECK_SECONDS', 300, 30, 86_400) * 1000,
    limits: {
      signup: r.rate('GATEWAY_LIMIT_SIGNUP', { points: 10, durationSeconds: 3600 }),
      magicLink: r.rate('GATEWAY_LIMIT_MAGIC_LINK', { points: 10, durationSeconds: 3600 }),
      magicLinkPerEmail: r.rate('GATEWAY_LIMIT_MAGIC_LINK_PER_EMAIL', { points: 3, durationSeconds: 3600 }),
      verify: r.rate('GATEWAY_LIMIT_MAGIC_LINK_VERIFY', { points: 30, durationSeconds: 300 }),
      apiKeyCreate: r.rate('GATEWAY_LIMIT_API_KEY_CREATE', { points: 30, durationSeconds: 3600 }),
      providerKeys: r.rate('GATEWAY_LIMIT_PROVIDER_KEYS', { points: 60, durationSeconds: 3600 }),
    },
    maxApiKeysPerTenant: r.int('GATEWAY_MAX_API_KEYS_PER_TENANT', 100, 1, 10_000),
    trustProxy: 'value' in trustProxy ? trustProxy.value : false,
    controlBodyLimit: 64 * 1024,
    bodyLimit: r.int('GATEWAY_BODY_LIMIT_BYTES', 32 * 1024 * 1024, 1024, 512 * 1024 * 1024),
    compactDefault: compactDefault ?? { kind: 'off' },
    upstream: {
      connectTimeoutMs: r.int('GATEWAY_UPSTREAM_CONNECT_TIMEOUT_MS', 10_000, 100, 600_000),
      firstByteTimeoutMs: r.int('GATEWAY_UPSTREAM_FIRST_BYTE_TIMEOUT_MS', 300_000, 100, 3_600_000),
      idleTimeoutMs: r.int('GATEWAY_UPSTREAM_IDLE_TIMEOUT_MS', 120_000, 100, 3_600_000),
      connections,
      connectionsPerTenant: r.int('GATEWAY_UPSTREAM_CONNECTIONS_PER_TENANT', Math.min(32, connections), 1, 10_000),
      maxResponseBytes: r.int('GATEWAY_UPSTREAM_MAX_RESPONSE_BYTES', 16 * 1024 * 1024, 64 * 1024, 512 * 1024 * 1024),
    },
    allowPrivateUpstreams,
    tenantConcurrency: r.int('GATEWAY_TENANT_CONCURRENCY', 64, 1, 100_000),
    routing: {
      retries: r.int('GATEWAY_RETRIES', 2, 0, 10),
      retryBaseDelayMs: r.int('GATEWAY_RETRY_BASE_DELAY_MS', 250, 0, 60_000),
      retryMaxDelayMs: r.int('GATEWAY_RETRY_MAX_DELAY_MS', 5000, 0, 300_000),
      defaultFallbacks: r.int('GATEWAY_DEFAULT_FALLBACKS', 2, 0, 5),
      breakerFailures: r.int('GATEWAY_BREAKER_FAILURES', 5, 1, 1000),
      breakerCooldownMs: r.int('GATEWAY_BREAKER_COOLDOWN_MS', 30_000, 10, 3_600_000),
      breakerSharedTenants: r.int('GATEWAY_BREAKER_SHARED_TENANTS', 3, 1, 100),
      breakerSharedWindowMs: r.int('GATEWAY_BREAKER_SHARED_WINDOW_MS', 60_000, 100, 3_600_000),
      stickyTtlMs: r.int('GATEWAY_STICKY_TTL_SECONDS', 3600, 60, 7 * 86_400) * 1000,
      stickySessions,
      stickySessionsPerTenant: r.int('GATEWAY_STICKY_SESSIONS_PER_TENANT', Math.min(25_000, stickySessions), 1, 10_000_000),
    },
    anthropicDefaultMaxTokens: r.int('GATEWAY_ANTHROPIC_DEFAULT_MAX_TOKENS', 4096, 1, 1_000_000),
    usage: {
      flushMs: r.int('GATEWAY_USAGE_FLUSH_MS', 1000, 10, 60_000),
      batchSize: r.int('GATEWAY_USAGE_BATCH_SIZE', 500, 1, 10_000),
      retentionMs: r.int('GATEWAY_USAGE_RETENTION_DAYS', 90, 1, 3650) * DAY,
      journalDir: journalDir(r.string('GATEWAY_USAGE_JOURNAL_DIR'), dataDir),
    },
    storedBodies: {
      maxBytes: r.int('GATEWAY_STORED_BODY_MAX_BYTES', 1024 * 1024, 1024, 16 * 1024 * 1024),
      quotaBytes: r.int('GATEWAY_STORED_BODIES_QUOTA_BYTES', 256 * 1024 * 1024, 0, 1024 * 1024 * 1024 * 1024),
    },
    purgeIntervalMs: r.int('GATEWAY_PURGE_INTERVAL_MINUTES', 60, 1, 1440) * MINUTE,
    budgets: {
      defaultOutputTokens: r.int('GATEWAY_BUDGET_DEFAULT_OUTPUT_TOKENS', 4096, 1, 1_000_000),
      reservationTtlMs: r.int('GATEWAY_BUDGET_RESERVATION_TTL_SECONDS', 900, 10, 86_400) * 1000,
    },
    cache: {
      enabled: r.string('GATEWAY_CACHE_ENABLED') === undefined || r.bool('GATEWAY_CACHE_ENABLED'),
      ttlSeconds: r.int('GATEWAY_CACHE_TTL_SECONDS', 3600, 1, 30 * 86_400),
      maxBytes: r.int('GATEWAY_CACHE_MAX_BYTES', 64 * 1024 * 1024, 0, 64 * 1024 * 1024 * 1024),
      tenantSharePercent: r.int('GATEWAY_CACHE_TENANT_SHARE_PERCENT', 25, 1, 100),
      maxEntryBytes: r.int('GATEWAY_CACHE_MAX_ENTRY_BYTES', 1024 * 1024, 1024, 512 * 1024 * 1024),
      dedupLeaseMs: r.int('GATEWAY_CACHE_DEDUP_LEASE_MS', 10_000, 300, 600_000),
    },
  };
  checkShares(config, r.problems);
  r.throwIfProblems();
  if (!encryptionKeyText) config.encryptionKey = parseKey(devSecret(dataDir, 'GATEWAY_ENCRYPTION_KEY'))!;
  return config;
}

/** A tenant's share of something shared cannot be more than the whole of it (each is read on its own above). */
function checkShares(config: GatewayConfig, problems: string[]): void {
  const { upstream, routing } = config;
  if (upstream.connectionsPerTenant > upstream.connections) {
    problems.push(
      `GATEWAY_UPSTREAM_CONNECTIONS_PER_TENANT (${upstream.connectionsPerTenant}) must be at most GATEWAY_UPSTREAM_CONNECTIONS (${upstream.connections}), the pool it is a share of`,
    );
  }
  if (routing.stickySessionsPerTenant > routing.stickySessions) {
    problems.push(
      `GATEWAY_STICKY_SESSIONS_PER_TENANT (${routing.stickySessionsPerTenant}) must be at most GATEWAY_STICKY_SESSIONS (${routing.stickySessions}), the table it is a share of`,
    );
  }
}

const ACCOUNTS_VARIABLES = ['GATEWAY_ACCOUNTS_URL', 'GATEWAY_ACCOUNTS_CLIENT_ID', 'GATEWAY_ACCOUNTS_CLIENT_SECRET'] as const;

/** GATEWAY_ACCOUNTS_URL, _CLIENT_ID and _CLIENT_SECRET: all three (the console's account sign-in) or none (off). */
function readAccountsSignIn(r: EnvReader, baseUrl: string | undefined, production: boolean): AccountsSignIn | undefined {
  const set = ACCOUNTS_VARIABLES.filter((name) => r.string(name) !== undefined);
  if (set.length === 0) return undefined;
  if (set.length < ACCOUNTS_VARIABLES.length) {
    const missing = ACCOUNTS_VARIABLES.filter((name) => !set.includes(name));
    r.problems.push(`${missing.join(' and ')} must be set with ${set.join(' and ')}: the console's "Sign in with your account" needs all of GATEWAY_ACCOUNTS_URL, GATEWAY_ACCOUNTS_CLIENT_ID and GATEWAY_ACCOUNTS_CLIENT_SECRET (none turns it off)`);
    return undefined;
  }
  const issuer = r.url('GATEWAY_ACCOUNTS_URL') ?? '';
  const clientSecret = r.string('GATEWAY_ACCOUNTS_CLIENT_SECRET') ?? '';
  if (production && URL.canParse(issuer) && new URL(issuer).protocol !== 'https:') r.problems.push('GATEWAY_ACCOUNTS_URL must be https when NODE_ENV=production');
  if (production && clientSecret.length < 32) r.problems.push('GATEWAY_ACCOUNTS_CLIENT_SECRET must be at least 32 characters when NODE_ENV=production');
  return { issuer, clientId: r.string('GATEWAY_ACCOUNTS_CLIENT_ID') ?? '', clientSecret, redirectUri: `${baseUrl ?? ''}${ACCOUNTS_CALLBACK_PATH}` };
}

/** GATEWAY_USAGE_JOURNAL_DIR: a directory, `off`, or unset for DATA_DIR/usage-journal. */
function journalDir(raw: string | undefined, dataDir: string): string | undefined {
  const text = raw?.trim() ?? '';
  if (text.toLowerCase() === 'off') return undefined;
  return text === '' ? join(dataDir, 'usage-journal') : text;
}

/** `true`, or a comma-separated list of host names and CIDR ranges (a bare address is its own /32 or /128). */
function parsePrivateUpstreams(raw: string | undefined, problems: string[]): PrivateUpstreams {
  const text = raw?.trim() ?? '';
  if (text === '' || text.toLowerCase() === 'false') return { kind: 'none' };
  if (text.toLowerCase() === 'true') return { kind: 'all' };
  const hosts: string[] = [];
  const cidrs: string[] = [];
  for (const item of text.split(/[\s,]+/).filter(Boolean)) {
    const [address, prefix] = item.split('/') as [string, string | undefined];
    const family = address.includes(':') ? 6 : /^\d+(\.\d+){3}$/.test(address) ? 4 : 0;
    if (family === 0 && prefix === undefined && /^[a-z0-9.-]+$/i.test(item)) hosts.push(item.toLowerCase());
    else if (family !== 0 && (prefix === undefined || (/^\d+$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128)))) {
      cidrs.push(prefix === undefined ? `${address}/${family === 4 ? 32 : 128}` : item);
    } else problems.push(`GATEWAY_ALLOW_PRIVATE_UPSTREAMS: "${item}" is neither a host name nor an address or CIDR range`);
  }
  return { kind: 'list', hosts, cidrs };
}

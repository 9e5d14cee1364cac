import { join } from 'node:path';
import { devSecret, EnvReader, parseKey, parsePreviousKeys, type RateSetting } from '../platform/config.ts';
import { readSharedSettings, type SharedSettings } from '../platform/settings.ts';
import { parseTrustProxy, type TrustProxy } from '../platform/trust-proxy.ts';
import { redirectUriProblem } from './oauth/redirect-uris.ts';

/** The shared settings (production, dataDir, logLevel, redisUrl, smtp, mail) and the account service's own. */
export interface AuthConfig extends SharedSettings {
  host: string;
  port: number;
  baseUrl: string;
  databaseUrl: string | undefined;
  sqlitePath: string;
  apiKey: string;
  /** True when the API key was generated into DATA_DIR (development). */
  apiKeyGenerated: boolean;
  /** AUTH_API_KEY_PREVIOUS: keys still accepted as X-Api-Key while callers move to AUTH_API_KEY. */
  previousApiKeys: string[];
  /** AES-256-GCM key sealing email bodies in the outbox (AUTH_ENCRYPTION_KEY; generated into DATA_DIR in development). */
  encryptionKey: Buffer;
  /** AUTH_ENCRYPTION_KEY_PREVIOUS: keys being retired; outbox bodies they sealed still open, until `npm run rotate-keys` reseals them. */
  previousEncryptionKeys: Buffer[];
  /** Template with `{token}`; undefined: the service's own /verify page. */
  verifyUrl: string | undefined;
  /** Template with `{token}`; undefined: the service's own /reset-password page. */
  resetUrl: string | undefined;
  bcryptCost: number;
  sessionTtlMs: number;
  verificationTtlMs: number;
  /** Lifetime of a password reset link. */
  resetTtlMs: number;
  lockout: { maxFailures: number; lockMs: number };
  limits: {
    register: RateSetting;
    login: RateSetting;
    resend: RateSetting;
    resendPerEmail: RateSetting;
    forgot: RateSetting;
    forgotPerEmail: RateSetting;
  };
  purgeIntervalMs: number;
  bodyLimit: number;
  /** Proxies whose X-Forwarded-For is believed (addresses and CIDR ranges, or a hop count); false: none. */
  trustProxy: TrustProxy;
  tokens: { maxPerUser: number; defaultTtlDays: number };
  /** Undefined when OAUTH_CLIENT_ID / OAUTH_CLIENT_SECRET are unset: every OAuth path is 404. */
  oauth: OAuthConfig | undefined;
}

export interface OAuthConfig {
  /** The static confidential client. */
  clientId: string;
  clientSecret: string;
  redirectUris: string[];
  /** Serve the OAuth paths and pages without X-Api-Key (the service is the public authorization server). */
  publicEndpoints: boolean;
  /** Within this window a just-rotated refresh token gets its successor again instead of revoking the family. */
  refreshGraceMs: number;
  /** Metadata-URL clients may use http and private addresses (tests, local development). */
  allowInsecureMetadata: boolean;
  /** Dynamically registered clients that never obtained a token are purged after this. */
  unusedClientTtlMs: number;
  codeTtlMs: number;
  accessTtlMs: number;
  refreshTtlMs: number;
  /** metadataFetch: per requesting IP, fetches of client metadata documents (cache hits are free). */
  limits: { registration: RateSetting; authorize: RateSetting; metadataFetch: RateSetting };
  /** Browser cookies get Secure and the __Host- prefix. */
  secureCookies: boolean;
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** Reads the account service's settings; throws ConfigError listing every problem. */
export function loadAuthConfig(env: Record<string, string | undefined> = process.env): AuthConfig {
  const r = new EnvReader(env);
  const shared = readSharedSettings(r, { prefix: 'AUTH', defaultFrom: 'Accounts <no-reply@localhost>', mailCarries: 'emails' });
  const { production, dataDir } = shared;
  const port = r.int('AUTH_PORT', 8080, 0, 65535);
  const why = 'when NODE_ENV=production';

  let apiKey = r.string('AUTH_API_KEY');
  const apiKeyGenerated = apiKey === undefined && !production;
  if (production) {
    apiKey = r.require('AUTH_API_KEY', `${why} (every request but /healthz must carry it as X-Api-Key)`);
    if (apiKey && apiKey.length < 32) r.problems.push('AUTH_API_KEY must be at least 32 characters');
  }
  // Rotation without downtime: the old key stays accepted while the callers move to the new one (docs/operations.md).
  const previousApiKeys = (r.string('AUTH_API_KEY_PREVIOUS') ?? '')
    .split(',')
    .map((k) => k.trim())
    .filter((k) => k !== '');
  for (const k of previousApiKeys) {
    if (k.length < 32) r.problems.push('AUTH_API_KEY_PREVIOUS must hold keys of at least 32 characters, separated by commas');
    if (k === apiKey) r.problems.push('AUTH_API_KEY_PREVIOUS holds the same key as AUTH_API_KEY: set AUTH_API_KEY to the new key and AUTH_API_KEY_PREVIOUS to the old one');
  }
  const encryptionKeyText = production
    ? r.require('AUTH_ENCRYPTION_KEY', `${why} (it seals email bodies in the outbox, which hold live verification links)`)
    : r.string('AUTH_ENCRYPTION_KEY');
  const encryptionKey = encryptionKeyText ? parseKey(encryptionKeyText) : undefined;
  if (encryptionKeyText && !encryptionKey) {
    r.problems.push('AUTH_ENCRYPTION_KEY must be 32 bytes written as 64 hex digits or 43 base64url characters (e.g. `openssl rand -hex 32`)');
  }
  const previousEncryptionKeys = parsePreviousKeys(r, 'AUTH_ENCRYPTION_KEY', encryptionKey);
  const baseUrl = production ? r.url('AUTH_BASE_URL') : r.url('AUTH_BASE_URL', `http://localhost:${port}`);
  if (production && !baseUrl) r.problems.push(`AUTH_BASE_URL is required ${why} (the public URL used in emails)`);
  const verifyUrl = r.string('AUTH_VERIFY_URL');
  if (verifyUrl && !verifyUrl.includes('{token}')) r.problems.push('AUTH_VERIFY_URL must contain {token}');
  const resetUrl = r.string('AUTH_RESET_URL');
  if (resetUrl && !resetUrl.includes('{token}')) r.problems.push('AUTH_RESET_URL must contain {token}');
  const bcryptCost = r.int('AUTH_BCRYPT_COST', 12, 4, 16);
  if (production && bcryptCost < 12) r.problems.push(`AUTH_BCRYPT_COST must be at least 12 ${why}`);
  const trustProxy = parseTrustProxy('AUTH_TRUST_PROXY', r.string('AUTH_TRUST_PROXY'));
  if ('problem' in trustProxy) r.problems.push(trustProxy.problem);

  const config: AuthConfig = {
    ...shared,
    host: r.string('AUTH_HOST') ?? (production ? '0.0.0.0' : '127.0.0.1'),
    port,
    baseUrl: baseUrl ?? '',
    databaseUrl: r.string('AUTH_DATABASE_URL'),
    sqlitePath: join(dataDir, 'auth.sqlite'),
    apiKey: apiKey ?? '',
    apiKeyGenerated,
    previousApiKeys,
    encryptionKey: encryptionKey ?? Buffer.alloc(0),
    previousEncryptionKeys,
    verifyUrl,
    resetUrl,
    bcryptCost,
    sessionTtlMs: r.int('AUTH_SESSION_TTL_DAYS', 30, 1, 365) * DAY,
    verificationTtlMs: r.int('AUTH_VERIFICATION_TTL_HOURS', 24, 1, 168) * HOUR,
    resetTtlMs: r.int('AUTH_RESET_TTL_MINUTES', 60, 5, 1440) * 60_000,
    lockout: {
      maxFailures: r.int('AUTH_LOCKOUT_FAILURES', 5, 1, 100),
      lockMs: r.int('AUTH_LOCKOUT_MINUTES', 15, 1, 1440) * 60_000,
    },
    limits: {
      register: r.rate('AUTH_LIMIT_REGISTER', { points: 20, durationSeconds: 3600 }),
      login: r.rate('AUTH_LIMIT_LOGIN', { points: 30, durationSeconds: 300 }),
      resend: r.rate('AUTH_LIMIT_RESEND', { points: 10, durationSeconds: 3600 }),
      resendPerEmail: r.rate('AUTH_LIMIT_RESEND_PER_EMAIL', { points: 3, durationSeconds: 3600 }),
      forgot: r.rate('AUTH_LIMIT_FORGOT', { points: 10, durationSeconds: 3600 }),
      forgotPerEmail: r.rate('AUTH_LIMIT_FORGOT_PER_EMAIL', { points: 3, durationSeconds: 3600 }),
    },
    purgeIntervalMs: r.int('AUTH_PURGE_INTERVAL_MINUTES', 60, 1, 1440) * 60_000,
    bodyLimit: r.int('AUTH_BODY_LIMIT_BYTES', 64 * 1024, 1024, 10 * 1024 * 1024),
    trustProxy: 'value' in trustProxy ? trustProxy.value : false,
    tokens: {
      maxPerUser: r.int('AUTH_TOKENS_MAX_PER_USER', 20, 1, 1000),
      defaultTtlDays: r.int('AUTH_TOKENS_DEFAULT_TTL_DAYS', 365, 1, 3650),
    },
    oauth: loadOAuthConfig(r, production),
  };
  r.throwIfProblems();
  if (config.apiKeyGenerated) config.apiKey = devSecret(dataDir, 'AUTH_API_KEY');
  if (!encryptionKeyText) config.encryptionKey = parseKey(devSecret(dataDir, 'AUTH_ENCRYPTION_KEY'))!;
  return config;
}

function loadOAuthConfig(r: EnvReader, production: boolean): OAuthConfig | undefined {
  const clientId = r.string('OAUTH_CLIENT_ID');
  const clientSecret = r.string('OAUTH_CLIENT_SECRET');
  const allowInsecureMetadata = r.bool('OAUTH_CLIENT_METADATA_ALLOW_INSECURE');
  if (production && allowInsecureMetadata) {
    r.problems.push('OAUTH_CLIENT_METADATA_ALLOW_INSECURE is for tests and local development and is refused when NODE_ENV=production');
  }
  if (!clientId && !clientSecret) return undefined;
  if (!clientId || !clientSecret) {
    r.problems.push('OAUTH_CLIENT_ID and OAUTH_CLIENT_SECRET must be set together (both unset disables OAuth)');
    return undefined;
  }
  if (production && clientSecret.length < 32) r.problems.push('OAUTH_CLIENT_SECRET must be at least 32 characters');
  if (clientId.startsWith('svc_') || /^https?:/.test(clientId)) {
    r.problems.push('OAUTH_CLIENT_ID must not start with svc_ or be a URL (those name dynamic and metadata-URL clients)');
  }
  const redirectUris = (r.string('OAUTH_CLIENT_REDIRECT_URIS') ?? '').split(/[\s,]+/).filter(Boolean);
  if (redirectUris.length === 0) r.problems.push('OAUTH_CLIENT_REDIRECT_URIS must list at least one redirect URI (comma-separated)');
  for (const uri of redirectUris) {
    const problem = redirectUriProblem(uri, 'native');
    if (problem) r.problems.push(`OAUTH_CLIENT_REDIRECT_URIS: "${uri}" ${problem}`);
  }
  return {
    clientId,
    clientSecret,
    redirectUris,
    publicEndpoints: r.bool('OAUTH_PUBLIC_ENDPOINTS'),
    refreshGraceMs: r.int('OAUTH_REFRESH_REUSE_GRACE_SECONDS', 0, 0, 300) * 1000,
    allowInsecureMetadata,
    unusedClientTtlMs: r.int('OAUTH_UNUSED_CLIENT_TTL_DAYS', 7, 1, 3650) * DAY,
    codeTtlMs: 10 * 60_000,
    accessTtlMs: HOUR,
    refreshTtlMs: 30 * DAY,
    limits: {
      registration: r.rate('OAUTH_LIMIT_REGISTRATION', { points: 60, durationSeconds: 3600 }),
      authorize: r.rate('OAUTH_LIMIT_AUTHORIZE', { points: 600, durationSeconds: 300 }),
      metadataFetch: r.rate('OAUTH_LIMIT_METADATA_FETCH', { points: 60, durationSeconds: 60 }),
    },
    secureCookies: production,
  };
}

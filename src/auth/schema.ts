import type { Generated, Kysely } from 'kysely';
import type { OutboxTable } from '../platform/mail.ts';

/** Every table of the account service. Times are epoch milliseconds. */
export interface AuthTables {
  users: {
    id: string;
    email: string;
    password_hash: string;
    email_verified_at: number | null;
    failed_logins: number;
    locked_until: number | null;
    /** Sign-in attempts under way, and until when that count holds (migration 0011; login-failures.ts). */
    pending_logins: Generated<number>;
    pending_logins_until: number | null;
    created_at: number;
    updated_at: number;
  };
  /** Failed sign-ins per address, with or without an account, and attempts under way (login-failures.ts). */
  login_failures: {
    address_hash: string;
    failures: number;
    locked_until: number | null;
    pending: Generated<number>;
    pending_until: number | null;
    updated_at: number;
  };
  sessions: {
    id: string;
    user_id: string;
    token_hash: string;
    created_at: number;
    expires_at: number;
    revoked_at: number | null;
    ip: string;
    user_agent: string | null;
    /** Written at sign-in, then at most once a minute as the session is used (migration 0010). */
    last_used_at: number | null;
  };
  verification_tokens: SingleUseTokenRow;
  /** Password reset links (migration 0006): single use, only the token's SHA-256 is stored. */
  password_reset_tokens: SingleUseTokenRow;
  personal_access_tokens: {
    id: string;
    user_id: string;
    name: string;
    scope: string;
    token_hash: string;
    created_at: number;
    expires_at: number;
    last_used_at: number | null;
    revoked_at: number | null;
  };
  oauth_clients: {
    client_id: string;
    client_name: string | null;
    client_uri: string | null;
    logo_uri: string | null;
    redirect_uris: string;
    application_type: string;
    scope: string | null;
    created_at: number;
    last_token_at: number | null;
    /** JSON array: the grant types the client registered (RFC 7591 section 2). */
    grant_types: string;
  };
  oauth_requests: { id: string; client_id: string; params: string; created_at: number; expires_at: number };
  oauth_families: {
    id: string;
    user_id: string;
    client_id: string;
    scope: string;
    resource: string | null;
    derive_key: string;
    created_at: number;
    /** The one place a family's (and so each of its tokens') revocation is recorded. */
    revoked_at: number | null;
  };
  oauth_codes: {
    id: string;
    code_hash: string;
    client_id: string;
    user_id: string;
    redirect_uri: string;
    scope: string;
    resource: string | null;
    code_challenge: string | null;
    created_at: number;
    expires_at: number;
    used_at: number | null;
    family_id: string | null;
  };
  oauth_tokens: OAuthTokenRow;
  oauth_consents: {
    user_id: string;
    client_id: string;
    redirect_uri: string;
    scope: string;
    created_at: number;
    updated_at: number;
    /** The client's name as the consent page showed it (migration 0010; null on rows from before). */
    client_name: string | null;
  };
  outbox: OutboxTable;
  job_runs: { name: string; last_run_at: number };
}

/**
 * One issuance of a token family: the access token and the refresh token
 * handed out together (by a code exchange or a refresh), one row, so that a
 * rotation writes one row. Client, user, resource and revocation live on the
 * family; only the scope can differ per issuance (a refresh may narrow it).
 */
export interface OAuthTokenRow {
  refresh_hash: string;
  /** Null only for rows migrated without a matching live access token. */
  access_hash: string | null;
  family_id: string;
  scope: string;
  created_at: number;
  /** Set to the revocation time when the access token alone is revoked (RFC 7009). */
  access_expires_at: number;
  refresh_expires_at: number;
  rotated_at: number | null;
}

/** A token sent by email that works once: verification and password reset links. */
export interface SingleUseTokenRow {
  id: string;
  user_id: string;
  token_hash: string;
  created_at: number;
  expires_at: number;
  used_at: number | null;
}

export type AuthDb = Kysely<AuthTables>;
export type UserRow = AuthTables['users'];

/** The user as the API shows it. */
export interface User {
  id: string;
  email: string;
  email_verified: boolean;
  created_at: string;
}

export function toUser(row: Pick<UserRow, 'id' | 'email' | 'email_verified_at' | 'created_at'>): User {
  return {
    id: row.id,
    email: row.email,
    email_verified: row.email_verified_at !== null,
    created_at: isoTime(row.created_at),
  };
}

const isoCache = new Map<number, string>();

/**
 * Epoch milliseconds as an ISO 8601 string. Formatting a date costs more than
 * looking up a user, and the same few creation times are formatted again and
 * again on /v1/me, so recent results are kept (a bounded map, cleared when full).
 */
export function isoTime(ms: number): string {
  let iso = isoCache.get(ms);
  if (iso === undefined) {
    if (isoCache.size >= 10_000) isoCache.clear();
    iso = new Date(ms).toISOString();
    isoCache.set(ms, iso);
  }
  return iso;
}

import type { Kysely } from 'kysely';
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
    created_at: number;
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
  };
  verification_tokens: {
    id: string;
    user_id: string;
    token_hash: string;
    created_at: number;
    expires_at: number;
    used_at: number | null;
  };
  outbox: OutboxTable;
  job_runs: { name: string; last_run_at: number };
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
    created_at: new Date(row.created_at).toISOString(),
  };
}

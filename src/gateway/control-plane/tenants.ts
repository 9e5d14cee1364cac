import { randomUUID } from 'node:crypto';
import { safeEqual } from '../../platform/crypto.ts';
import { isUniqueViolation } from '../../platform/db.ts';
import { normalizeEmail } from '../../platform/email-address.ts';
import { fieldProblem, HttpProblem, tooManyRequests } from '../../platform/errors.ts';
import { issueConfirmation } from './address-confirmation.ts';
import { insertApiKey } from './api-keys.ts';
import type { GatewayDeps } from '../deps.ts';
import { createSession } from './gateway-sessions.ts';
import type { GatewayTables } from '../schema.ts';
import { mergeTenantSettings, parseTenantSettings, type TenantSettings, type TenantSettingsPatch } from './tenant-settings.ts';
import { releaseAddress, workspaceForProvenAddress } from './workspace-ownership.ts';

/**
 * Tenants (workspaces). Table `tenants`: one per address held (a released
 * workspace holds none, workspace-ownership.ts); `store_bodies` turns on
 * keeping prompt and completion bodies in the request log.
 */
export interface Tenant {
  id: string;
  name: string;
  /** The address it holds, or, once released, the one it held. */
  email: string;
  /** `unconfirmed`: created through the API, its address not proven yet; `released`: it holds no address any more. */
  email_status: EmailStatus;
  store_bodies: boolean;
  /** The pipeline settings (tenant-settings.ts); `{}`: every default. */
  settings: TenantSettings;
  created_at: string;
}

export type EmailStatus = 'confirmed' | 'unconfirmed' | 'released';

type TenantRow = GatewayTables['tenants'];

function emailStatus(row: Pick<TenantRow, 'email' | 'email_confirmed_at'>): EmailStatus {
  if (row.email === null) return 'released';
  return row.email_confirmed_at === null ? 'unconfirmed' : 'confirmed';
}

function toTenant(row: TenantRow): Tenant {
  return {
    id: row.id,
    name: row.name,
    email: row.email ?? row.released_email ?? '',
    email_status: emailStatus(row),
    store_bodies: row.store_bodies === 1,
    settings: parseTenantSettings(row.settings),
    created_at: new Date(row.created_at).toISOString(),
  };
}

export function requireEmail(input: string): string {
  const email = normalizeEmail(input);
  if (!email) throw fieldProblem('invalid_email', 'email', 'The email address is not valid.');
  return email;
}

function requireTenantName(input: string): string {
  const name = input.trim();
  if (name === '') throw fieldProblem('invalid_name', 'name', 'The workspace name must not be empty.');
  return name;
}

export interface SignupResult {
  tenantId: string;
  apiKey: string;
  apiKeyId: string;
  sessionToken: string;
  sessionExpiresAt: number;
}

const emailTaken = () =>
  new HttpProblem(409, 'email_taken', 'A workspace with this email address exists; ask for a sign-in link at /api/v1/auth/magic-link/request.');

/**
 * POST /api/v1/signup, in this order:
 * 1. GATEWAY_SIGNUP: `closed` refuses; `token` requires the admin token
 *    (compared in constant time);
 * 2. the per-IP bucket (before any work, and before the admin token can be guessed at length);
 * 3. name and address valid;
 * 4. one transaction: the address must be free, or held by a workspace that
 *    never confirmed it and whose confirmation link has expired (released
 *    here; with the admin token, at once: the operator vouches for the
 *    address); else 409 email_taken. Then the tenant, its first API key
 *    ("default") and a session. Under `open` the workspace is unconfirmed
 *    and a confirmation link is emailed (address-confirmation.ts): its key
 *    and session work at once, but no sign-in of the address reaches it
 *    until the link is followed. Under `token` it is confirmed.
 */
export async function signup(
  deps: Pick<GatewayDeps, 'db' | 'clock' | 'config' | 'limiters' | 'metrics' | 'outbox' | 'mailQueued'>,
  input: { name: string; email: string; ip: string; adminToken: string | undefined },
): Promise<SignupResult> {
  const { config } = deps;
  if (config.signup === 'closed') throw new HttpProblem(403, 'signup_closed', 'Sign-up is closed on this gateway (GATEWAY_SIGNUP=closed).');
  const limit = await deps.limiters.signup.consume(input.ip);
  if (!limit.allowed) {
    deps.metrics.rateLimited.inc({ bucket: 'signup' });
    throw tooManyRequests('rate_limited', 'Too many sign-ups from this IP address; try again later.', limit.retryAfterMs);
  }
  if (config.signup === 'token' && !(input.adminToken && config.adminToken && safeEqual(input.adminToken, config.adminToken))) {
    throw new HttpProblem(401, 'admin_token_required', 'Sign-up on this gateway requires the admin token as "Authorization: Bearer <GATEWAY_ADMIN_TOKEN>".');
  }
  const vouched = config.signup === 'token';
  const name = requireTenantName(input.name);
  const email = requireEmail(input.email);
  const now = deps.clock.now();
  const tenantId = randomUUID();
  try {
    const result = await deps.db.transaction().execute(async (trx) => {
      const holder = await trx.selectFrom('tenants').select(['id', 'email_confirmed_at', 'confirmation_expires_at']).where('email', '=', email).executeTakeFirst();
      if (holder) {
        const held = holder.email_confirmed_at !== null || (!vouched && (holder.confirmation_expires_at ?? 0) > now);
        if (held || !(await releaseAddress(trx, holder.id, email, now))) throw emailTaken();
      }
      await trx
        .insertInto('tenants')
        .values({ id: tenantId, name, email, store_bodies: 0, settings: '{}', created_at: now, email_confirmed_at: vouched ? now : null })
        .execute();
      const key = await insertApiKey(trx, now, tenantId, 'default');
      const session = await createSession(trx, deps.clock, config.sessionTtlMs, tenantId);
      if (!vouched) await issueConfirmation(trx, deps, { id: tenantId, name, email, createdAt: now }, now);
      return { tenantId, apiKey: key.key, apiKeyId: key.id, sessionToken: session.token, sessionExpiresAt: session.expiresAt };
    });
    if (!vouched) deps.mailQueued();
    return result;
  } catch (err) {
    if (isUniqueViolation(err)) throw emailTaken();
    throw err;
  }
}

export async function getTenant(deps: Pick<GatewayDeps, 'db'>, tenantId: string): Promise<Tenant> {
  const row = await deps.db.selectFrom('tenants').selectAll().where('id', '=', tenantId).executeTakeFirst();
  // A live session whose tenant is gone cannot happen (sessions cascade), but answer it as a dead session.
  if (!row) throw new HttpProblem(401, 'invalid_session', 'The workspace of this session no longer exists.');
  return toTenant(row);
}

export async function updateTenant(
  deps: Pick<GatewayDeps, 'db' | 'tenantChanged'>,
  tenantId: string,
  changes: { name?: string | undefined; storeBodies?: boolean | undefined; settings?: TenantSettingsPatch | undefined },
): Promise<Tenant> {
  const set: Partial<TenantRow> = {};
  if (changes.name !== undefined) set.name = requireTenantName(changes.name);
  if (changes.storeBodies !== undefined) set.store_bodies = changes.storeBodies ? 1 : 0;
  const settingsChanged = changes.settings !== undefined && Object.keys(changes.settings).length > 0;
  await deps.db.transaction().execute(async (trx) => {
    if (settingsChanged) {
      const row = await trx.selectFrom('tenants').select('settings').where('id', '=', tenantId).executeTakeFirst();
      set.settings = JSON.stringify(mergeTenantSettings(parseTenantSettings(row?.settings ?? '{}'), changes.settings!));
    }
    if (Object.keys(set).length > 0) await trx.updateTable('tenants').set(set).where('id', '=', tenantId).execute();
  });
  // The data plane caches store_bodies and the settings with the tenant's provider keys.
  if (changes.storeBodies !== undefined || settingsChanged) await deps.tenantChanged(tenantId);
  return getTenant(deps, tenantId);
}

/**
 * The workspace of an address the account service has verified (the
 * console's "Sign in with your account"), in this order:
 * 1. a confirmed workspace holding the address: that one, whatever
 *    GATEWAY_SIGNUP says (as a magic link would);
 * 2. with GATEWAY_SIGNUP `open`, the per-IP sign-up bucket (a new workspace
 *    may follow);
 * 3. one transaction (workspace-ownership.ts): an unconfirmed workspace
 *    holding the address is released (the sign-in proved the address; its
 *    creator did not), and a new confirmed workspace named after the address
 *    is created, with no API key yet (the console creates one and shows it);
 *    two concurrent first sign-ins of one address end in the same workspace;
 * 4. GATEWAY_SIGNUP `closed` or `token`: no workspace is created (only an
 *    operator may), 403 signup_by_invitation, after any release of step 3.
 */
export async function tenantForVerifiedEmail(
  deps: Pick<GatewayDeps, 'db' | 'clock' | 'config' | 'limiters' | 'metrics' | 'outbox' | 'mailQueued'>,
  input: { email: string; ip: string },
): Promise<{ tenantId: string; created: boolean; released: boolean }> {
  const email = requireEmail(input.email);
  const holder = await deps.db.selectFrom('tenants').select(['id', 'email_confirmed_at']).where('email', '=', email).executeTakeFirst();
  if (holder && holder.email_confirmed_at !== null) return { tenantId: holder.id, created: false, released: false };
  const mayCreate = deps.config.signup === 'open';
  if (mayCreate) {
    const limit = await deps.limiters.signup.consume(input.ip);
    if (!limit.allowed) {
      deps.metrics.rateLimited.inc({ bucket: 'signup' });
      throw tooManyRequests('rate_limited', 'Too many sign-ups from this IP address; try again later.', limit.retryAfterMs);
    }
  }
  const now = deps.clock.now();
  const outcome = await deps.db.transaction().execute((trx) => workspaceForProvenAddress(trx, deps, email, { now, mayCreate }));
  const released = outcome.kind !== 'joined' && outcome.released !== undefined;
  if (released) deps.mailQueued();
  if (outcome.kind === 'refused') throw signupByInvitation(email);
  return { tenantId: outcome.tenantId, created: outcome.kind === 'created', released };
}

/** 403 for a proven address without a workspace where only an operator creates workspaces (GATEWAY_SIGNUP closed or token). */
export function signupByInvitation(email: string): HttpProblem {
  return new HttpProblem(
    403,
    'signup_by_invitation',
    `There is no workspace for ${email} on this gateway, and new workspaces are created by an operator here. Ask an operator of this gateway to invite you (create a workspace for this address); then sign in again.`,
  );
}

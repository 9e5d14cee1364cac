import { randomUUID } from 'node:crypto';
import { safeEqual } from '../platform/crypto.ts';
import { isUniqueViolation } from '../platform/db.ts';
import { normalizeEmail } from '../platform/email-address.ts';
import { fieldProblem, HttpProblem, tooManyRequests } from '../platform/errors.ts';
import { insertApiKey } from './api-keys.ts';
import type { GatewayDeps } from './deps.ts';
import { createSession } from './gateway-sessions.ts';
import type { GatewayTables } from './schema.ts';
import { mergeTenantSettings, parseTenantSettings, type TenantSettings, type TenantSettingsPatch } from './tenant-settings.ts';

/**
 * Tenants (workspaces). Table `tenants`: one per owner address; `store_bodies`
 * turns on keeping prompt and completion bodies in the request log.
 */
export interface Tenant {
  id: string;
  name: string;
  email: string;
  store_bodies: boolean;
  /** The pipeline settings (tenant-settings.ts); `{}`: every default. */
  settings: TenantSettings;
  created_at: string;
}

type TenantRow = GatewayTables['tenants'];

function toTenant(row: TenantRow): Tenant {
  return { id: row.id, name: row.name, email: row.email, store_bodies: row.store_bodies === 1, settings: parseTenantSettings(row.settings), created_at: new Date(row.created_at).toISOString() };
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

/**
 * POST /api/v1/signup, in this order:
 * 1. GATEWAY_SIGNUP: `closed` refuses; `token` requires the admin token
 *    (compared in constant time);
 * 2. the per-IP bucket (before any work, and before the admin token can be guessed at length);
 * 3. name and address valid;
 * 4. one transaction: the tenant, its first API key ("default") and a
 *    session; an address already signed up is 409 email_taken.
 */
export async function signup(
  deps: Pick<GatewayDeps, 'db' | 'clock' | 'config' | 'limiters' | 'metrics'>,
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
  const name = requireTenantName(input.name);
  const email = requireEmail(input.email);
  const now = deps.clock.now();
  const tenantId = randomUUID();
  try {
    return await deps.db.transaction().execute(async (trx) => {
      await trx.insertInto('tenants').values({ id: tenantId, name, email, store_bodies: 0, settings: '{}', created_at: now }).execute();
      const key = await insertApiKey(trx, now, tenantId, 'default');
      const session = await createSession(trx, deps.clock, config.sessionTtlMs, tenantId);
      return { tenantId, apiKey: key.key, apiKeyId: key.id, sessionToken: session.token, sessionExpiresAt: session.expiresAt };
    });
  } catch (err) {
    if (isUniqueViolation(err)) {
      throw new HttpProblem(409, 'email_taken', 'A workspace with this email address exists; ask for a sign-in link at /api/v1/auth/magic-link/request.');
    }
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
 * 1. a workspace with this address (magic-link sign-up or an earlier account
 *    sign-in): that one, whatever GATEWAY_SIGNUP says (as a magic link would);
 * 2. GATEWAY_SIGNUP `closed` or `token`: refused, since a new workspace is a
 *    sign-up and only an operator may create it (403 signup_by_invitation);
 * 3. the per-IP sign-up bucket;
 * 4. a new workspace named after the address (its local part), with no API key yet (the
 *    console creates one and shows it); two concurrent first sign-ins of one
 *    address end in the same workspace (the unique address decides).
 */
export async function tenantForVerifiedEmail(
  deps: Pick<GatewayDeps, 'db' | 'clock' | 'config' | 'limiters' | 'metrics'>,
  input: { email: string; ip: string },
): Promise<{ tenantId: string; created: boolean }> {
  const email = requireEmail(input.email);
  const find = () => deps.db.selectFrom('tenants').select('id').where('email', '=', email).executeTakeFirst();
  const existing = await find();
  if (existing) return { tenantId: existing.id, created: false };
  if (deps.config.signup !== 'open') {
    throw new HttpProblem(
      403,
      'signup_by_invitation',
      `There is no workspace for ${email} on this gateway, and new workspaces are created by an operator here. Ask an operator of this gateway to invite you (create a workspace for this address); then sign in again.`,
    );
  }
  const limit = await deps.limiters.signup.consume(input.ip);
  if (!limit.allowed) {
    deps.metrics.rateLimited.inc({ bucket: 'signup' });
    throw tooManyRequests('rate_limited', 'Too many sign-ups from this IP address; try again later.', limit.retryAfterMs);
  }
  const tenantId = randomUUID();
  try {
    await deps.db.insertInto('tenants').values({ id: tenantId, name: email.split('@')[0]!, email, store_bodies: 0, settings: '{}', created_at: deps.clock.now() }).execute();
    return { tenantId, created: true };
  } catch (err) {
    const raced = isUniqueViolation(err) ? await find() : undefined;
    if (raced) return { tenantId: raced.id, created: false };
    throw err;
  }
}

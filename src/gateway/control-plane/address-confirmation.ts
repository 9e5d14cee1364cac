import { randomToken, sha256 } from '../../platform/crypto.ts';
import { HttpProblem, tooManyRequests } from '../../platform/errors.ts';
import { enqueueEmail } from '../../platform/mail.ts';
import type { GatewayDeps } from '../deps.ts';
import { confirmationEmail } from './emails.ts';
import type { GatewayDb } from '../schema.ts';

/**
 * Confirmation links of workspaces created through the API
 * (GATEWAY_SIGNUP=open): `gwc_` + 32 random bytes, emailed to the address;
 * only the SHA-256 is stored, on the workspace's row (`confirmation_hash`,
 * `confirmation_expires_at`, GATEWAY_CONFIRM_TTL_HOURS): one live link per
 * workspace, a new one replaces it. Following it confirms the address for
 * that workspace, if it still holds it; from then on sign-ins of the address
 * reach it (workspace-ownership.ts). The hash stays after use, so a second
 * click is answered "already confirmed" rather than "unknown".
 */
export const CONFIRMATION_PREFIX = 'gwc_';
const LINK_SHAPE = /^gwc_[A-Za-z0-9_-]{43}$/;

/**
 * Stores a fresh link on the workspace and queues its email, in the caller's
 * transaction: only while the workspace holds `email` unconfirmed (a release
 * or a confirmation committed meanwhile wins). True when a link was sent.
 */
export async function issueConfirmation(
  trx: GatewayDb,
  deps: Pick<GatewayDeps, 'outbox' | 'config'>,
  workspace: { id: string; name: string; email: string; createdAt: number },
  now: number,
): Promise<boolean> {
  const token = randomToken(CONFIRMATION_PREFIX);
  const stored = await trx
    .updateTable('tenants')
    .set({ confirmation_hash: sha256(token), confirmation_expires_at: now + deps.config.confirmTtlMs })
    .where('id', '=', workspace.id)
    .where('email', '=', workspace.email)
    .where('email_confirmed_at', 'is', null)
    .executeTakeFirst();
  if (Number(stored.numUpdatedRows) !== 1) return false;
  await enqueueEmail(trx, deps.outbox, confirmationEmail(deps.config, workspace.email, token, workspace));
  return true;
}

const invalidLink = () =>
  new HttpProblem(400, 'invalid_token', 'The confirmation link is not valid (unknown, or replaced by a newer one).', { errors: [{ field: 'token', message: 'is not valid' }] });
const releasedWorkspace = () =>
  new HttpProblem(
    409,
    'workspace_released',
    'This workspace no longer holds the address: it was released, because a sign-in proved the address first or the link expired before another sign-up with it.',
  );

export interface ConfirmedWorkspace {
  tenantId: string;
  name: string;
  email: string;
  confirmedAt: number;
}

/** What the confirmation page shows before its button is pressed (a GET changes nothing): null for a link that is not one. */
export async function describeConfirmation(deps: Pick<GatewayDeps, 'db'>, token: string): Promise<{ name: string; email: string; createdAt: number } | null> {
  if (!LINK_SHAPE.test(token)) return null;
  const row = await deps.db.selectFrom('tenants').select(['name', 'email', 'created_at']).where('confirmation_hash', '=', sha256(token)).executeTakeFirst();
  return row?.email ? { name: row.name, email: row.email, createdAt: row.created_at } : null;
}

/**
 * POST /api/v1/auth/confirm-email, in this order:
 * 1. the per-IP bucket of magic-link verification (the same guessing bound);
 * 2. the shape `gwc_` + 43 characters;
 * 3. the link known (400), its workspace still holding the address (409
 *    workspace_released), not confirmed already (then the same 200 again:
 *    a second click changes nothing), within its lifetime (410);
 * 4. one conditional update: confirmed only if, at that moment, the
 *    workspace still holds the address unconfirmed under this very link (a
 *    release or a newer link committed meanwhile wins).
 * It signs no one in: the page says to sign in.
 */
export async function confirmAddress(deps: Pick<GatewayDeps, 'db' | 'clock' | 'limiters' | 'metrics'>, input: { token: string; ip: string }): Promise<ConfirmedWorkspace> {
  const limit = await deps.limiters.verify.consume(input.ip);
  if (!limit.allowed) {
    deps.metrics.rateLimited.inc({ bucket: 'magic_link_verify' });
    throw tooManyRequests('rate_limited', 'Too many attempts from this IP address; try again later.', limit.retryAfterMs);
  }
  if (!LINK_SHAPE.test(input.token)) throw invalidLink();
  const hash = sha256(input.token);
  const now = deps.clock.now();
  const find = () =>
    deps.db.selectFrom('tenants').select(['id', 'name', 'email', 'email_confirmed_at', 'confirmation_expires_at']).where('confirmation_hash', '=', hash).executeTakeFirst();
  const row = await find();
  if (!row) throw invalidLink();
  if (row.email === null) throw releasedWorkspace();
  if (row.email_confirmed_at !== null) return { tenantId: row.id, name: row.name, email: row.email, confirmedAt: row.email_confirmed_at };
  if ((row.confirmation_expires_at ?? 0) <= now) throw new HttpProblem(410, 'token_expired', 'This confirmation link has expired; ask for a new one from the workspace.');
  const confirmed = await deps.db
    .updateTable('tenants')
    .set({ email_confirmed_at: now })
    .where('id', '=', row.id)
    .where('confirmation_hash', '=', hash)
    .where('email', '=', row.email)
    .where('email_confirmed_at', 'is', null)
    .where('confirmation_expires_at', '>', now)
    .executeTakeFirst();
  if (Number(confirmed.numUpdatedRows) === 1) return { tenantId: row.id, name: row.name, email: row.email, confirmedAt: now };
  // Lost to a concurrent change: answer by the row as it is now.
  const after = await find();
  if (!after) throw invalidLink();
  if (after.email === null) throw releasedWorkspace();
  if (after.email_confirmed_at !== null) return { tenantId: after.id, name: after.name, email: after.email, confirmedAt: after.email_confirmed_at };
  throw new HttpProblem(410, 'token_expired', 'This confirmation link has expired; ask for a new one from the workspace.');
}

/**
 * POST /api/v1/tenant/email-confirmation: a new link for the session's
 * workspace, replacing the old one, while it holds its address unconfirmed;
 * limited per address like sign-in links (GATEWAY_LIMIT_MAGIC_LINK_PER_EMAIL).
 * A creator may keep asking: that keeps another API sign-up of the address
 * out (409), never a sign-in, which proves the address and releases it.
 */
export async function resendConfirmation(deps: GatewayDeps, tenantId: string): Promise<{ email: string; expiresAt: number }> {
  const row = await deps.db.selectFrom('tenants').select(['id', 'name', 'email', 'created_at', 'email_confirmed_at']).where('id', '=', tenantId).executeTakeFirstOrThrow();
  if (row.email === null) throw releasedWorkspace();
  if (row.email_confirmed_at !== null) throw new HttpProblem(409, 'email_confirmed', 'The address of this workspace is confirmed already.');
  const limit = await deps.limiters.magicLinkPerEmail.consume(row.email);
  if (!limit.allowed) {
    deps.metrics.rateLimited.inc({ bucket: 'magic_link' });
    throw tooManyRequests('rate_limited', 'Too many emails to this address; try again later.', limit.retryAfterMs);
  }
  const now = deps.clock.now();
  const email = row.email;
  const sent = await deps.db.transaction().execute((trx) => issueConfirmation(trx, deps, { id: row.id, name: row.name, email, createdAt: row.created_at }, now));
  if (!sent) throw new HttpProblem(409, 'workspace_changed', 'The workspace was confirmed or released meanwhile; read it again.');
  deps.mailQueued();
  return { email, expiresAt: now + deps.config.confirmTtlMs };
}

import { randomToken, sha256 } from '../../platform/crypto.ts';
import { HttpProblem, tooManyRequests } from '../../platform/errors.ts';
import { enqueueEmail } from '../../platform/mail.ts';
import type { GatewayDeps } from '../deps.ts';
import { magicLinkEmail } from './emails.ts';
import { createSession } from './gateway-sessions.ts';
import type { GatewayDb } from '../schema.ts';
import { requireEmail, signupByInvitation } from './tenants.ts';
import { workspaceForProvenAddress } from './workspace-ownership.ts';

/**
 * Sign-in links. Table `magic_links`: token_hash (SHA-256 of `gwm_` + 32
 * random bytes), tenant_id (the holder of the address when it was sent),
 * email (the address it was sent to), created_at, expires_at (15 minutes),
 * used_at. Several links may be live at once (mail arrives out of order);
 * each works once, and the per-address bucket bounds how many there can be.
 * Following one proves the address: it signs in to the confirmed workspace
 * holding it, never to an unconfirmed one (workspace-ownership.ts).
 */
export const MAGIC_LINK_PREFIX = 'gwm_';
const LINK_SHAPE = /^gwm_[A-Za-z0-9_-]{43}$/;

/**
 * POST /api/v1/auth/magic-link/request. The caller answers the same 202
 * whatever happens here, and in the same time: on the reply path only work
 * that does not depend on the address (normalising it, the per-IP then
 * per-address buckets, silently); the lookup, the link and its email are
 * written after the reply, in one transaction, by background work.
 */
export async function requestMagicLink(deps: GatewayDeps, input: { email: string; ip: string }): Promise<void> {
  const email = requireEmail(input.email);
  const byIp = await deps.limiters.magicLink.consume(input.ip);
  const result = byIp.allowed ? await deps.limiters.magicLinkPerEmail.consume(email) : byIp;
  if (!result.allowed) {
    deps.metrics.rateLimited.inc({ bucket: 'magic_link' });
    return;
  }
  deps.background.run('magic link email', () => issueMagicLink(deps, email));
}

async function issueMagicLink(deps: GatewayDeps, email: string): Promise<void> {
  const now = deps.clock.now();
  const queued = await deps.db.transaction().execute(async (trx) => {
    const tenant = await trx.selectFrom('tenants').select(['id', 'name', 'created_at', 'email_confirmed_at']).where('email', '=', email).executeTakeFirst();
    if (!tenant) return false;
    const token = randomToken(MAGIC_LINK_PREFIX);
    await trx
      .insertInto('magic_links')
      .values({ token_hash: sha256(token), tenant_id: tenant.id, email, created_at: now, expires_at: now + deps.config.magicLinkTtlMs, used_at: null })
      .execute();
    // An unconfirmed holder: the email says that the link gives a workspace of one's own and releases that one.
    const unconfirmed = tenant.email_confirmed_at === null ? { name: tenant.name, createdAt: tenant.created_at } : undefined;
    await enqueueEmail(trx, deps.outbox, magicLinkEmail(deps.config, email, token, unconfirmed));
    return true;
  });
  if (queued) deps.mailQueued();
}

const invalidLink = () => new HttpProblem(400, 'invalid_token', 'The sign-in link is not valid; ask for a new one.', { errors: [{ field: 'token', message: 'is not valid' }] });

/**
 * POST /api/v1/auth/magic-link/verify, in this order:
 * 1. the per-IP bucket (guessing is hopeless at 256 bits, but it bounds the work);
 * 2. the shape `gwm_` + 43 characters (no lookup for anything else);
 * 3. the link known, unused, within its lifetime;
 * 4. one transaction: claim it (conditional on used_at, so two concurrent
 *    uses cannot both succeed); the address it was sent to is proven, so its
 *    workspace is the confirmed one holding it, else a new one of the
 *    prover's, an unconfirmed holder being released
 *    (workspace-ownership.ts); a session in it.
 * 5. GATEWAY_SIGNUP `closed` or `token` and no confirmed workspace: 403
 *    signup_by_invitation, the link used and any release committed.
 * A refused link changes nothing.
 */
export async function verifyMagicLink(
  deps: Pick<GatewayDeps, 'db' | 'clock' | 'config' | 'limiters' | 'metrics' | 'outbox' | 'mailQueued'>,
  input: { token: string; ip: string },
): Promise<{ tenantId: string; sessionToken: string; expiresAt: number; created: boolean }> {
  const limit = await deps.limiters.verify.consume(input.ip);
  if (!limit.allowed) {
    deps.metrics.rateLimited.inc({ bucket: 'magic_link_verify' });
    throw tooManyRequests('rate_limited', 'Too many sign-in attempts from this IP address; try again later.', limit.retryAfterMs);
  }
  if (!LINK_SHAPE.test(input.token)) throw invalidLink();
  const hash = sha256(input.token);
  const now = deps.clock.now();
  type Verified = { tenantId: string; sessionToken: string; expiresAt: number; created: boolean; released: boolean } | { refused: string; released: boolean };
  const result = await deps.db.transaction().execute(async (trx): Promise<Verified> => {
    const link = await trx.selectFrom('magic_links').selectAll().where('token_hash', '=', hash).executeTakeFirst();
    if (!link) throw invalidLink();
    const used = () => new HttpProblem(409, 'token_used', 'This sign-in link has already been used; ask for a new one.');
    if (link.used_at !== null) throw used();
    if (link.expires_at <= now) throw new HttpProblem(410, 'token_expired', 'This sign-in link has expired; ask for a new one.');
    const claimed = await trx
      .updateTable('magic_links')
      .set({ used_at: now })
      .where('token_hash', '=', hash)
      .where('used_at', 'is', null)
      .executeTakeFirst();
    if (Number(claimed.numUpdatedRows) !== 1) throw used();
    const email = link.email ?? (await addressOfLegacyLink(trx, link.tenant_id));
    const outcome = await workspaceForProvenAddress(trx, deps, email, { now, mayCreate: deps.config.signup === 'open' });
    const released = outcome.kind !== 'joined' && outcome.released !== undefined;
    if (outcome.kind === 'refused') return { refused: email, released };
    const session = await createSession(trx, deps.clock, deps.config.sessionTtlMs, outcome.tenantId);
    return { tenantId: outcome.tenantId, sessionToken: session.token, expiresAt: session.expiresAt, created: outcome.kind === 'created', released };
  });
  if (result.released) deps.mailQueued();
  if ('refused' in result) throw signupByInvitation(result.refused);
  return { tenantId: result.tenantId, sessionToken: result.sessionToken, expiresAt: result.expiresAt, created: result.created };
}

/** A link sent before migration 0008 names no address: the one its workspace held (all such workspaces were confirmed by that migration). */
async function addressOfLegacyLink(trx: GatewayDb, tenantId: string): Promise<string> {
  const row = await trx.selectFrom('tenants').select(['email', 'released_email']).where('id', '=', tenantId).executeTakeFirst();
  const email = row?.email ?? row?.released_email;
  if (!email) throw invalidLink();
  return email;
}

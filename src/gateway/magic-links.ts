import { randomToken, sha256 } from '../platform/crypto.ts';
import { HttpProblem, tooManyRequests } from '../platform/errors.ts';
import { enqueueEmail } from '../platform/mail.ts';
import type { GatewayDeps } from './deps.ts';
import { magicLinkEmail } from './emails.ts';
import { createSession } from './gateway-sessions.ts';
import { requireEmail } from './tenants.ts';

/**
 * Sign-in links. Table `magic_links`: token_hash (SHA-256 of `gwm_` + 32
 * random bytes), tenant_id, created_at, expires_at (15 minutes), used_at.
 * Several links may be live at once (mail arrives out of order); each works
 * once, and the per-address bucket bounds how many there can be.
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
    const tenant = await trx.selectFrom('tenants').select('id').where('email', '=', email).executeTakeFirst();
    if (!tenant) return false;
    const token = randomToken(MAGIC_LINK_PREFIX);
    await trx
      .insertInto('magic_links')
      .values({ token_hash: sha256(token), tenant_id: tenant.id, created_at: now, expires_at: now + deps.config.magicLinkTtlMs, used_at: null })
      .execute();
    await enqueueEmail(trx, deps.outbox, magicLinkEmail(deps.config, email, token));
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
 *    uses cannot both succeed) and create a session.
 * A refused link changes nothing.
 */
export async function verifyMagicLink(
  deps: Pick<GatewayDeps, 'db' | 'clock' | 'config' | 'limiters' | 'metrics'>,
  input: { token: string; ip: string },
): Promise<{ tenantId: string; sessionToken: string; expiresAt: number }> {
  const limit = await deps.limiters.verify.consume(input.ip);
  if (!limit.allowed) {
    deps.metrics.rateLimited.inc({ bucket: 'magic_link_verify' });
    throw tooManyRequests('rate_limited', 'Too many sign-in attempts from this IP address; try again later.', limit.retryAfterMs);
  }
  if (!LINK_SHAPE.test(input.token)) throw invalidLink();
  const hash = sha256(input.token);
  const now = deps.clock.now();
  return deps.db.transaction().execute(async (trx) => {
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
    const session = await createSession(trx, deps.clock, deps.config.sessionTtlMs, link.tenant_id);
    return { tenantId: link.tenant_id, sessionToken: session.token, expiresAt: session.expiresAt };
  });
}

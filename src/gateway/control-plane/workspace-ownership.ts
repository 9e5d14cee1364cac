import { randomUUID } from 'node:crypto';
import { HttpProblem } from '../../platform/errors.ts';
import { enqueueEmail, type OutboxContext } from '../../platform/mail.ts';
import type { GatewayConfig } from '../config.ts';
import { workspaceReleasedEmail } from './emails.ts';
import type { GatewayDb } from '../schema.ts';

/**
 * Who holds an address. A workspace holds one (`tenants.email`, unique) and
 * it is confirmed once the address was proven for it: its confirmation link
 * followed (address-confirmation.ts), or created by a sign-in that proved
 * the address, or by an operator's invitation (GATEWAY_SIGNUP=token). A
 * sign-in (magic link, or the account service's verified address) proves the
 * address and never joins an unconfirmed workspace: whoever created that one
 * through the API proved nothing (pre-account hijacking; the account
 * service's password reset is the model, docs/security.md). Instead the
 * unconfirmed workspace is released: it keeps working for its creator (its
 * keys, its sessions), but holds no address, so no sign-in reaches it again.
 */

export interface ReleasedWorkspace {
  id: string;
  name: string;
  createdAt: number;
}

/**
 * Releases an unconfirmed workspace's address, in the caller's transaction:
 * conditional on it still holding `email` unconfirmed, so that of two
 * concurrent releases, or a release and a confirmation, exactly one wins.
 * Its confirmation link can no longer confirm anything (a click is answered
 * "released"). True when this call released it.
 */
export async function releaseAddress(trx: GatewayDb, tenantId: string, email: string, now: number): Promise<boolean> {
  const released = await trx
    .updateTable('tenants')
    .set({ email: null, released_email: email, released_at: now })
    .where('id', '=', tenantId)
    .where('email', '=', email)
    .where('email_confirmed_at', 'is', null)
    .executeTakeFirst();
  return Number(released.numUpdatedRows) === 1;
}

export type ProvenAddress =
  | { kind: 'joined'; tenantId: string }
  | { kind: 'created'; tenantId: string; released: ReleasedWorkspace | undefined }
  /** No workspace may be created here (GATEWAY_SIGNUP closed or token); an unconfirmed holder was still released. */
  | { kind: 'refused'; released: ReleasedWorkspace | undefined };

/** Rounds of {@link workspaceForProvenAddress} before giving up: each is lost only to another writer of the same address. */
const ROUNDS = 3;

/**
 * The workspace of someone who has just proven `email`, in the caller's
 * transaction, in this order:
 * 1. a confirmed workspace holding the address: that one;
 * 2. an unconfirmed one: released (releaseAddress), and the address told by
 *    email that it was ("a workspace created for this address without
 *    confirmation was released");
 * 3. without `mayCreate`, refused (the release stands: the prover, not the
 *    creator, owns the address);
 * 4. a new confirmed workspace, named after the address's local part,
 *    inserted only if the address is still free (`on conflict do nothing`).
 * A step lost to a concurrent writer of the same address (two sign-ins of it
 * at once; the unique address decides) starts the rounds again from the
 * address's holder as committed now: two concurrent proofs end in the same
 * workspace. On PostgreSQL each statement of a READ COMMITTED transaction
 * sees what committed before it, and the conditional update and the insert
 * wait for a concurrent transaction that holds the row; SQLite runs one
 * transaction at a time.
 */
export async function workspaceForProvenAddress(
  trx: GatewayDb,
  deps: { outbox: OutboxContext; config: Pick<GatewayConfig, 'baseUrl'> },
  email: string,
  options: { now: number; mayCreate: boolean },
): Promise<ProvenAddress> {
  const { now } = options;
  let released: ReleasedWorkspace | undefined;
  for (let round = 0; round < ROUNDS; round++) {
    const holder = await trx.selectFrom('tenants').select(['id', 'name', 'created_at', 'email_confirmed_at']).where('email', '=', email).executeTakeFirst();
    if (holder && holder.email_confirmed_at !== null) return { kind: 'joined', tenantId: holder.id };
    if (holder) {
      if (!(await releaseAddress(trx, holder.id, email, now))) continue;
      released = { id: holder.id, name: holder.name, createdAt: holder.created_at };
      await enqueueEmail(trx, deps.outbox, workspaceReleasedEmail(deps.config, email, released));
    }
    if (!options.mayCreate) return { kind: 'refused', released };
    const tenantId = randomUUID();
    const inserted = await trx
      .insertInto('tenants')
      .values({ id: tenantId, name: email.split('@')[0]!, email, store_bodies: 0, settings: '{}', created_at: now, email_confirmed_at: now })
      .onConflict((oc) => oc.column('email').doNothing())
      .executeTakeFirst();
    if (Number(inserted.numInsertedOrUpdatedRows ?? 0) === 1) return { kind: 'created', tenantId, released };
  }
  throw new HttpProblem(409, 'address_busy', 'Another sign-in with this address was completing at the same moment; try again.');
}

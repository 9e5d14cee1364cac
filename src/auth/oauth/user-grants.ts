import type { AuthDeps } from '../deps.ts';
import { SCOPES } from '../scopes.ts';
import { isMetadataClientId } from './client-metadata.ts';
import { hostOf, registeredClient, staticClient } from './clients.ts';

/**
 * The applications a user let act on their behalf, as the user's own account
 * pages list them: one entry per client, made of the remembered consents
 * (`oauth_consents`, one row per redirect URI) and the token families
 * (`oauth_families` with their `oauth_tokens`). A client with a live family
 * but no consent row (consents from before migration 0009 were dropped, their
 * tokens kept) is listed too: it can still act, so it must be revocable.
 */
export interface UserGrant {
  client_id: string;
  client_name: string;
  /** Dynamic and static clients: the host of client_uri, else of the first redirect URI (what the consent page showed); metadata-URL clients: the host of the metadata URL; null when the client is gone. */
  client_host: string | null;
  /** Every scope granted: the consents' and the live families', space-separated, in the registry's order. */
  scope: string;
  /** The first consent (or, without one, the oldest live family). */
  granted_at: string;
  /** The latest issuance of tokens to this client for this user (a code exchange or a refresh); null when none is left. */
  last_used_at: string | null;
}

interface ClientActivity {
  scopes: Set<string>;
  consentName: { name: string | null; at: number } | null;
  consentedAt: number | null;
  liveSince: number | null;
  lastIssued: number | null;
}

/** The user's grants, most recently granted first. Nothing is fetched: a metadata-URL client is named as its consent page named it. */
export async function listUserGrants(deps: Pick<AuthDeps, 'db' | 'clock' | 'config'>, userId: string): Promise<UserGrant[]> {
  const now = deps.clock.now();
  const consents = await deps.db
    .selectFrom('oauth_consents')
    .select(['client_id', 'scope', 'created_at', 'updated_at', 'client_name'])
    .where('user_id', '=', userId)
    .execute();
  // One row per family: its latest issuance and the latest expiry of its tokens.
  const families = await deps.db
    .selectFrom('oauth_families as f')
    .leftJoin('oauth_tokens as t', 't.family_id', 'f.id')
    .select(['f.client_id', 'f.scope', 'f.created_at', 'f.revoked_at'])
    .select((eb) => [
      eb.fn.max('t.created_at').as('last_issued_at'),
      eb.fn.max('t.access_expires_at').as('access_until'),
      eb.fn.max('t.refresh_expires_at').as('refresh_until'),
    ])
    .where('f.user_id', '=', userId)
    .groupBy(['f.id', 'f.client_id', 'f.scope', 'f.created_at', 'f.revoked_at'])
    .execute();

  const byClient = new Map<string, ClientActivity>();
  const activity = (clientId: string): ClientActivity => {
    let a = byClient.get(clientId);
    if (!a) {
      a = { scopes: new Set(), consentName: null, consentedAt: null, liveSince: null, lastIssued: null };
      byClient.set(clientId, a);
    }
    return a;
  };
  for (const c of consents) {
    const a = activity(c.client_id);
    for (const s of c.scope.split(' ')) a.scopes.add(s);
    a.consentedAt = Math.min(a.consentedAt ?? c.created_at, c.created_at);
    if (!a.consentName || c.updated_at > a.consentName.at) a.consentName = { name: c.client_name, at: c.updated_at };
  }
  for (const f of families) {
    const live = f.revoked_at === null && Math.max(Number(f.access_until ?? 0), Number(f.refresh_until ?? 0)) > now;
    if (!live) continue;
    const a = activity(f.client_id);
    for (const s of f.scope.split(' ')) a.scopes.add(s);
    a.liveSince = Math.min(a.liveSince ?? f.created_at, f.created_at);
  }
  // Last use counts every family of a listed client, revoked or expired ones included.
  for (const f of families) {
    const a = byClient.get(f.client_id);
    if (a && f.last_issued_at !== null) a.lastIssued = Math.max(a.lastIssued ?? 0, Number(f.last_issued_at));
  }

  const names = await describeClients(deps, [...byClient.keys()]);
  const grants = [...byClient].map(([clientId, a]): UserGrant & { sortKey: number } => {
    const described = names.get(clientId) ?? { name: clientId, host: null };
    const grantedAt = a.consentedAt ?? a.liveSince ?? 0;
    return {
      client_id: clientId,
      client_name: a.consentName?.name ?? described.name,
      client_host: described.host,
      scope: orderedScopes(a.scopes),
      granted_at: new Date(grantedAt).toISOString(),
      last_used_at: a.lastIssued === null ? null : new Date(a.lastIssued).toISOString(),
      sortKey: grantedAt,
    };
  });
  grants.sort((x, y) => y.sortKey - x.sortKey || (x.client_id < y.client_id ? -1 : 1));
  return grants.map(({ sortKey: _, ...grant }) => grant);
}

/** Scopes in the registry's order; any the registry no longer has last, as they were. */
function orderedScopes(scopes: Set<string>): string {
  const known = Object.keys(SCOPES).filter((s) => scopes.has(s));
  const unknown = [...scopes].filter((s) => s !== '' && !Object.hasOwn(SCOPES, s)).sort();
  return [...known, ...unknown].join(' ');
}

/**
 * Name and host of each client, without a fetch: the static client from the
 * environment, registered clients from their rows (one query), metadata-URL
 * clients by their URL's host. A registered client whose row is gone is left
 * out (the caller names it by its id).
 */
async function describeClients(
  deps: Pick<AuthDeps, 'db' | 'config'>,
  clientIds: string[],
): Promise<Map<string, { name: string; host: string | null }>> {
  const out = new Map<string, { name: string; host: string | null }>();
  const registered: string[] = [];
  for (const id of clientIds) {
    if (deps.config.oauth && id === deps.config.oauth.clientId) {
      const client = staticClient(deps.config.oauth);
      out.set(id, { name: client.name, host: client.host });
    } else if (isMetadataClientId(id)) {
      const host = hostOf(id);
      out.set(id, { name: host ?? id, host });
    } else {
      registered.push(id);
    }
  }
  if (registered.length > 0) {
    const rows = await deps.db
      .selectFrom('oauth_clients')
      .select(['client_id', 'client_name', 'client_uri', 'redirect_uris', 'application_type', 'scope', 'grant_types'])
      .where('client_id', 'in', registered)
      .execute();
    for (const row of rows) {
      const client = registeredClient(row);
      out.set(row.client_id, { name: client.name, host: client.host });
    }
  }
  return out;
}

/**
 * Forgets what the user granted a client and ends everything it holds, in
 * one transaction: unused authorization codes are deleted, every token family
 * of the client for this user is revoked (one conditional update: every
 * access and refresh token of it is refused from the commit on, as every
 * lookup joins the family), and the consent rows are deleted (the next
 * authorization asks again). Idempotent: a second call changes nothing.
 *
 * The codes go first. On PostgreSQL a code exchange claims its code and
 * opens its family in one transaction; deleting the unused codes waits for
 * a claim in flight, and the family update, a later statement, then sees
 * the family that claim opened (READ COMMITTED takes a snapshot per
 * statement). On SQLite transactions run one at a time.
 */
export async function revokeUserGrant(deps: Pick<AuthDeps, 'db' | 'clock'>, userId: string, clientId: string): Promise<void> {
  const now = deps.clock.now();
  await deps.db.transaction().execute(async (trx) => {
    await trx.deleteFrom('oauth_codes').where('user_id', '=', userId).where('client_id', '=', clientId).where('used_at', 'is', null).execute();
    await trx
      .updateTable('oauth_families')
      .set({ revoked_at: now })
      .where('user_id', '=', userId)
      .where('client_id', '=', clientId)
      .where('revoked_at', 'is', null)
      .execute();
    await trx.deleteFrom('oauth_consents').where('user_id', '=', userId).where('client_id', '=', clientId).execute();
  });
}

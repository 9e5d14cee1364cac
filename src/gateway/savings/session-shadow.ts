import type { ConversationState } from './account.ts';
import type { CacheState } from './cache-model.ts';

/**
 * The previous request of each conversation, as the savings accounting
 * needs it (account.ts): per conversation and model, its cache states (as
 * the client sent it, as the gateway sent it), per replica and bounded: at most `maxBytes` in all
 * (64 MiB by default) and a quarter of that per tenant, so that one
 * tenant's conversations can push out only its own. Least recently used
 * first. A conversation is a tenant's X-Gateway-Session-Id or, without one,
 * its prompt's start. A forgotten conversation (or one another replica
 * served) is accounted as account.ts says: nothing is claimed on a guess.
 */
export class ConversationShadow {
  readonly #tenants = new Map<string, { entries: Map<string, { state: Partial<ConversationState>; bytes: number }>; bytes: number }>();
  readonly #maxBytes: number;
  readonly #perTenant: number;
  #bytes = 0;

  constructor(maxBytes = 64 * 1024 * 1024, tenantShare = 0.25) {
    this.#maxBytes = maxBytes;
    this.#perTenant = Math.floor(maxBytes * tenantShare);
  }

  get bytes(): number {
    return this.#bytes;
  }

  get(tenantId: string, conversation: string): Partial<ConversationState> | undefined {
    const tenant = this.#tenants.get(tenantId);
    const entry = tenant?.entries.get(conversation);
    if (!tenant || !entry) return undefined;
    tenant.entries.delete(conversation);
    tenant.entries.set(conversation, entry);
    return entry.state;
  }

  set(tenantId: string, conversation: string, state: Partial<ConversationState>): void {
    const bytes = sizeOf(state) + conversation.length * 2;
    this.#remove(tenantId, conversation);
    if (bytes > this.#perTenant) return;
    let tenant = this.#tenants.get(tenantId);
    if (!tenant) {
      tenant = { entries: new Map(), bytes: 0 };
      this.#tenants.set(tenantId, tenant);
    }
    tenant.entries.set(conversation, { state, bytes });
    tenant.bytes += bytes;
    this.#bytes += bytes;
    while (tenant.bytes > this.#perTenant) this.#evictOldest(tenantId);
    while (this.#bytes > this.#maxBytes) this.#evictOldest(this.#largestTenant());
  }

  #remove(tenantId: string, conversation: string): void {
    const tenant = this.#tenants.get(tenantId);
    const entry = tenant?.entries.get(conversation);
    if (!tenant || !entry) return;
    tenant.entries.delete(conversation);
    tenant.bytes -= entry.bytes;
    this.#bytes -= entry.bytes;
    if (tenant.entries.size === 0) this.#tenants.delete(tenantId);
  }

  #evictOldest(tenantId: string): void {
    const oldest = this.#tenants.get(tenantId)?.entries.keys().next().value;
    if (oldest !== undefined) this.#remove(tenantId, oldest);
  }

  #largestTenant(): string {
    let largest = '';
    let most = -1;
    for (const [id, t] of this.#tenants) {
      if (t.bytes > most) {
        most = t.bytes;
        largest = id;
      }
    }
    return largest;
  }
}

/** Bytes the states hold: 22 per element of each prompt profile (counted once when shared), 8 per cached position, and a little for the objects. */
function sizeOf(state: Partial<ConversationState>): number {
  const profiles = new Set<CacheState['profile']>();
  let bytes = 200;
  for (const s of [state.client, state.sent0, state.sent1]) {
    if (s === undefined) continue;
    if (!profiles.has(s.profile)) bytes += s.profile.hashes.length * 22;
    profiles.add(s.profile);
    bytes += s.cached.length * 8 + 64;
  }
  return bytes;
}

import { sql } from 'kysely';
import type { Clock } from '../../../platform/clock.ts';
import { decryptWithAny, encrypt } from '../../../platform/crypto.ts';
import { HttpProblem } from '../../../platform/errors.ts';
import type { TenantContext } from '../../data-plane/tenant-context.ts';
import { isObject, type JsonObject } from '../../providers/json.ts';
import type { GatewayDb } from '../../schema.ts';
import { listedItem, outputItems, withItemIds, withOutputIds } from './stored-items.ts';

/**
 * The Responses API's conversation state, kept by the gateway (table
 * `stored_responses`) so that `previous_response_id` works whichever
 * provider answered and answers next: each upstream call is sent
 * stateless, with the whole chain expanded into its input.
 *
 * Each row holds one turn: its input items and the response object (with
 * its output), as JSON sealed with AES-256-GCM under GATEWAY_ENCRYPTION_KEY,
 * bound to its tenant and id by associated data. Sealed because a tenant's
 * conversations are kept by default (`store` is true unless the client says
 * otherwise), unlike stored bodies, which a tenant opts into: a database
 * dump or a backup alone must not reveal them.
 */

/** The longest chain expand follows: past it, a 400. */
export const MAX_CHAIN_TURNS = 10_000;

/**
 * A bound for expand's `maxBytes` of sealed payload, for callers without
 * their own: twice the default body limit, since each sealed turn also
 * carries its response's echo of the request (instructions, tools) and
 * base64 adds a third. An expansion holds about twice this in memory.
 */
export const DEFAULT_CHAIN_MAX_BYTES = 64 * 1024 * 1024;

/** Response ids are the gateway's own (`resp_…`): anything else can be no stored response's, and costs no query. */
const RESPONSE_ID = /^[A-Za-z0-9_-]{1,100}$/;
export const isResponseId = (id: string) => RESPONSE_ID.test(id);

/** A client-given id in a message: at most 100 characters of it. */
const shown = (id: string) => (id.length > 100 ? `${id.slice(0, 100)}…` : id);

/** Associated data binding a sealed response to its tenant and id: a row copied to another tenant or id no longer opens. */
export function storedResponseAad(tenantId: string, id: string): string {
  return `stored-response:${tenantId}:${id}`;
}

/** What one row holds, sealed. */
interface Payload {
  input: JsonObject[];
  response: JsonObject;
}

export interface StoredRecord {
  /** The gateway's id for the response (`resp_…`). */
  id: string;
  /** The response it continues (`previous_response_id`), already expanded by the caller. */
  previousId: string | undefined;
  /** This turn's input items (not the chain's). */
  input: JsonObject[];
  /** The response object as the client got it, with its `output`. */
  response: JsonObject;
}

/** OpenAI's list of a response's input items. */
export interface InputItemList {
  object: 'list';
  data: JsonObject[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

/** A link of a chain: a stored response, its predecessor and its sealed size. */
interface Link {
  id: string;
  previous_id: string | null;
  bytes: number;
}

/** 400 as OpenAI answers a `previous_response_id` it does not have; its clients (Codex) then start the conversation afresh. */
export const previousResponseNotFound = (id: string, detail = '') =>
  new HttpProblem(400, 'previous_response_not_found', `Previous response with id '${shown(id)}' not found.${detail}`, {
    type: 'invalid_request_error',
    param: 'previous_response_id',
  });

/** 403 for a `store: true` request when the tenant's storage quota is full (the POST route checks responseRoomLeft before going upstream). */
export const responseStorageFull = () =>
  new HttpProblem(
    403,
    'response_storage_full',
    "This workspace's storage quota (GATEWAY_STORED_BODIES_QUOTA_BYTES, shared by stored responses and stored bodies) is full: delete stored responses (DELETE /v1/responses/{id}) or send store: false.",
    { type: 'invalid_request_error', param: 'store' },
  );

/** Whether the tenant's quota has room to store a response (checked before the call goes upstream). */
export const responseRoomLeft = (tenant: Pick<TenantContext, 'storage'>): boolean => tenant.storage.hasRoom;

const unreadable = (cause?: unknown) =>
  new HttpProblem(
    500,
    'stored_response_unreadable',
    'A stored response opens with neither GATEWAY_ENCRYPTION_KEY nor GATEWAY_ENCRYPTION_KEY_PREVIOUS of this gateway.',
    { cause },
  );

/** A batch of sealed rows read at once while listing: at most this many rows, and this many bytes past the first. */
const READ_ROWS = 50;
const READ_BYTES = 8 * 1024 * 1024;

export class ResponseStore {
  readonly #db: GatewayDb;
  readonly #clock: Clock;
  readonly #keys: readonly Buffer[];
  readonly #onStored: (tenantId: string, bytes: number) => void;
  /** Each tenant's writes not yet committed: readers wait for them, so this process reads its own writes at once. */
  readonly #pending = new Map<string, Set<Promise<unknown>>>();

  /**
   * `encryptionKeys`: GATEWAY_ENCRYPTION_KEY (which seals), then the keys
   * being retired (which only open). `onStored`: told the sealed bytes of
   * each response stored (the tenant's quota takes them).
   */
  constructor(options: { db: GatewayDb; clock: Clock; encryptionKeys: readonly Buffer[]; onStored?: (tenantId: string, bytes: number) => void }) {
    if (options.encryptionKeys.length === 0) throw new Error('ResponseStore needs an encryption key');
    this.#db = options.db;
    this.#clock = options.clock;
    this.#keys = options.encryptionKeys;
    this.#onStored = options.onStored ?? (() => {});
  }

  /**
   * Stores one turn for `retentionMs`. Input items (and output items)
   * without an id get one (stored-items.ts). The write is visible to this
   * process's readers from the moment put is called: a client that sends
   * the next turn as soon as it has read response.completed finds this one
   * even if the insert has not committed yet.
   */
  async put(tenantId: string, record: StoredRecord, retentionMs: number): Promise<void> {
    if (!isResponseId(record.id)) throw new Error(`not a response id: ${shown(record.id)}`);
    const payload: Payload = { input: withItemIds(record.input, record.id, 'in'), response: withOutputIds(record.response, record.id) };
    const sealed = encrypt(this.#keys[0]!, JSON.stringify(payload), storedResponseAad(tenantId, record.id));
    const now = this.#clock.now();
    const write = this.#db
      .insertInto('stored_responses')
      .values({
        tenant_id: tenantId,
        id: record.id,
        previous_id: record.previousId ?? null,
        created_at: now,
        expires_at: now + retentionMs,
        bytes: sealed.length,
        sealed,
      })
      // A reused answer (a cache hit, a dedup follower) keeps the id it was made with: stored again, as this turn.
      .onConflict((oc) =>
        oc.columns(['tenant_id', 'id']).doUpdateSet((eb) => ({
          previous_id: eb.ref('excluded.previous_id'),
          created_at: eb.ref('excluded.created_at'),
          expires_at: eb.ref('excluded.expires_at'),
          bytes: eb.ref('excluded.bytes'),
          sealed: eb.ref('excluded.sealed'),
        })),
      )
      .execute();
    // Registered before the first await: a reader that starts after put was called waits for this write.
    const pending = this.#pending.get(tenantId) ?? new Set<Promise<unknown>>();
    this.#pending.set(tenantId, pending);
    pending.add(write);
    const done = () => {
      pending.delete(write);
      if (pending.size === 0 && this.#pending.get(tenantId) === pending) this.#pending.delete(tenantId);
    };
    write.then(done, done);
    await write;
    this.#onStored(tenantId, sealed.length);
  }

  /** The response object; undefined when absent, another tenant's, expired or deleted. */
  async get(tenantId: string, id: string): Promise<JsonObject | undefined> {
    await this.#settled(tenantId);
    if (!isResponseId(id)) return undefined;
    const row = await this.#db
      .selectFrom('stored_responses')
      .select('sealed')
      .where('tenant_id', '=', tenantId)
      .where('id', '=', id)
      .where('expires_at', '>', this.#clock.now())
      .executeTakeFirst();
    return row === undefined ? undefined : this.#open(tenantId, id, row.sealed).response;
  }

  /** Deletes a live response; false when there was none. Responses that continue it can no longer be continued. */
  async delete(tenantId: string, id: string): Promise<boolean> {
    await this.#settled(tenantId);
    if (!isResponseId(id)) return false;
    const result = await this.#db
      .deleteFrom('stored_responses')
      .where('tenant_id', '=', tenantId)
      .where('id', '=', id)
      .where('expires_at', '>', this.#clock.now())
      .executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  /**
   * The full input of the chain ending at `previousId`: each turn's input
   * items then its output items, oldest turn first, as stored (ids
   * included). One query walks the chain (a recursive CTE over
   * previous_id), bounded by {@link MAX_CHAIN_TURNS} turns and `maxBytes`
   * of sealed payload (a 400 past either). `previousId` absent, another
   * tenant's or expired, or any response before it deleted or expired:
   * 400 previous_response_not_found, as OpenAI answers.
   */
  async expand(tenantId: string, previousId: string, maxBytes: number): Promise<{ items: JsonObject[]; firstId: string; turns: number }> {
    await this.#settled(tenantId);
    if (!isResponseId(previousId)) throw previousResponseNotFound(previousId);
    const now = this.#clock.now();
    const bound = Math.max(0, Math.floor(maxBytes));
    // Each step adds one older turn while the chain is within both bounds; the one row past a bound tells it was passed.
    // `cross join`: SQLite then joins in the order written, each step a primary-key lookup from the turn before (left
    // to choose, it scanned the tenant's rows by the quota's index at every step: quadratic).
    const { rows } = await sql<Link & { sealed: string; depth: number; total: number }>`
      with recursive chain (id, previous_id, sealed, bytes, depth, total) as (
        select id, previous_id, sealed, bytes, 1, bytes from stored_responses
        where tenant_id = ${tenantId} and id = ${previousId} and expires_at > ${now}
        union all
        select r.id, r.previous_id, r.sealed, r.bytes, c.depth + 1, c.total + r.bytes
        from chain c cross join stored_responses r
        where r.tenant_id = ${tenantId} and r.id = c.previous_id and c.depth <= ${MAX_CHAIN_TURNS} and c.total <= ${bound} and r.expires_at > ${now}
      )
      select id, previous_id, sealed, bytes, depth, total from chain order by depth`.execute(this.#db);
    const oldest = rows.at(-1);
    if (oldest === undefined) throw previousResponseNotFound(previousId);
    if (rows.length > MAX_CHAIN_TURNS) throw chainTooLong(previousId);
    if (Number(oldest.total) > bound) throw chainTooLarge(previousId, bound);
    if (oldest.previous_id !== null) {
      throw previousResponseNotFound(previousId, ` It continues the response '${oldest.previous_id}', which was deleted or has expired.`);
    }
    const items: JsonObject[] = [];
    for (let i = rows.length - 1; i >= 0; i--) {
      const row = rows[i]!;
      const turn = this.#open(tenantId, row.id, row.sealed);
      for (const item of turn.input) items.push(item);
      for (const item of outputItems(turn.response)) items.push(item);
    }
    return { items, firstId: oldest.id, turns: rows.length };
  }

  /**
   * OpenAI's GET /v1/responses/{id}/input_items: every item the response
   * was generated from (each earlier turn's input and output items, oldest
   * first, then its own input items), a page of them in `order` after the
   * item `after`. Undefined when the response is absent (as get). Earlier
   * turns deleted or expired since are left out: their content is gone.
   * The chain's links are read in one query, the sealed turns in batches
   * as the page needs them, in the page's order.
   */
  async inputItems(tenantId: string, id: string, page: { after?: string | undefined; limit: number; order: 'asc' | 'desc' }): Promise<InputItemList | undefined> {
    await this.#settled(tenantId);
    if (!isResponseId(id)) return undefined;
    const now = this.#clock.now();
    const { rows: links } = await sql<Link>`
      with recursive chain (id, previous_id, bytes, depth) as (
        select id, previous_id, bytes, 1 from stored_responses
        where tenant_id = ${tenantId} and id = ${id} and expires_at > ${now}
        union all
        select r.id, r.previous_id, r.bytes, c.depth + 1
        from chain c cross join stored_responses r
        where r.tenant_id = ${tenantId} and r.id = c.previous_id and c.depth < ${MAX_CHAIN_TURNS} and r.expires_at > ${now}
      )
      select id, previous_id, bytes from chain order by depth`.execute(this.#db);
    if (links.length === 0) return undefined;
    const asc = page.order === 'asc';
    const data: JsonObject[] = [];
    let found = page.after === undefined;
    // limit + 1: the one past the page says whether there are more.
    visit: for await (const [link, turn] of this.#turns(tenantId, asc ? links.toReversed() : links, now)) {
      // The response's own turn lists its input only; an earlier turn its input, then its output.
      const items = link.id === id ? [...turn.input] : [...turn.input, ...outputItems(turn.response)];
      if (!asc) items.reverse();
      for (const item of items) {
        if (!found) {
          found = item['id'] === page.after;
          continue;
        }
        data.push(listedItem(item));
        if (data.length > page.limit) break visit;
      }
    }
    if (!found) throw itemNotFound(page.after!, id);
    const more = data.length > page.limit;
    if (more) data.pop();
    return { object: 'list', data, first_id: itemId(data[0]), last_id: itemId(data.at(-1)), has_more: more };
  }

  /** The sealed turns of `links`, in that order, read a batch at a time; a turn deleted meanwhile is skipped. */
  async *#turns(tenantId: string, links: readonly Link[], now: number): AsyncGenerator<[Link, Payload]> {
    for (let start = 0; start < links.length; ) {
      let end = start + 1;
      let bytes = Number(links[start]!.bytes);
      while (end < links.length && end - start < READ_ROWS && bytes + Number(links[end]!.bytes) <= READ_BYTES) bytes += Number(links[end++]!.bytes);
      const batch = links.slice(start, end);
      const rows = await this.#db
        .selectFrom('stored_responses')
        .select(['id', 'sealed'])
        .where('tenant_id', '=', tenantId)
        .where('id', 'in', batch.map((l) => l.id))
        .where('expires_at', '>', now)
        .execute();
      const sealed = new Map(rows.map((r) => [r.id, r.sealed]));
      for (const link of batch) {
        const row = sealed.get(link.id);
        if (row !== undefined) yield [link, this.#open(tenantId, link.id, row)];
      }
      start = end;
    }
  }

  /** Waits for the tenant's writes this process started before now. */
  async #settled(tenantId: string): Promise<void> {
    const pending = this.#pending.get(tenantId);
    if (pending !== undefined) await Promise.allSettled([...pending]);
  }

  #open(tenantId: string, id: string, sealed: string): Payload {
    let payload: unknown;
    try {
      payload = JSON.parse(decryptWithAny(this.#keys, sealed, storedResponseAad(tenantId, id)).plaintext);
    } catch (err) {
      throw unreadable(err);
    }
    if (!isObject(payload) || !Array.isArray(payload['input']) || !isObject(payload['response'])) throw unreadable();
    return payload as unknown as Payload;
  }
}

const itemId = (item: JsonObject | undefined) => (typeof item?.['id'] === 'string' ? item['id'] : null);

const chainTooLong = (id: string) =>
  new HttpProblem(
    400,
    'previous_response_chain_too_long',
    `The conversation that previous_response_id '${shown(id)}' continues has more than ${MAX_CHAIN_TURNS} responses; start a new one (without previous_response_id, sending the input it needs).`,
    { type: 'invalid_request_error', param: 'previous_response_id' },
  );

const chainTooLarge = (id: string, maxBytes: number) =>
  new HttpProblem(
    400,
    'previous_response_chain_too_large',
    `The conversation that previous_response_id '${shown(id)}' continues holds more than ${maxBytes >= 1024 * 1024 ? `${Math.floor(maxBytes / 1024 / 1024)} MiB` : `${maxBytes} bytes`}; start a new one (without previous_response_id, sending the input it needs).`,
    { type: 'invalid_request_error', param: 'previous_response_id' },
  );

const itemNotFound = (after: string, id: string) =>
  new HttpProblem(400, 'invalid_after', `No input item with id '${shown(after)}' in the response '${id}'.`, {
    type: 'invalid_request_error',
    param: 'after',
  });

/** The sealed bytes of the tenant's live stored responses (its quota counts them with its stored bodies); read from an index alone. */
export async function storedResponseBytes(db: GatewayDb, tenantId: string, now: number): Promise<number> {
  const row = await db
    .selectFrom('stored_responses')
    .select((eb) => eb.fn.coalesce(eb.fn.sum<number>('bytes'), sql<number>`0`).as('bytes'))
    .where('tenant_id', '=', tenantId)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  return Number(row?.bytes ?? 0);
}

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { KyselyPlugin } from 'kysely';
import OpenAI from 'openai';
import { gatewayService } from '../../../src/gateway/main.ts';
import type { JsonObject } from '../../../src/gateway/providers/json.ts';
import { responseRetentionMs } from '../../../src/gateway/settings/responses.ts';
import {
  MAX_CHAIN_TURNS,
  ResponseStore,
  type StoredRecord,
  responseRoomLeft,
  responseStorageFull,
  storedResponseBytes,
} from '../../../src/gateway/surfaces/responses/store.ts';
import { purgeGateway } from '../../../src/gateway/usage/purge.ts';
import { ManualClock } from '../../../src/platform/clock.ts';
import { openaiErrorBody } from '../../../src/platform/error-format.ts';
import { HttpProblem } from '../../../src/platform/errors.ts';
import { DB_KINDS } from '../../helpers/env.ts';
import { type LiveGateway, type LiveTenant, startLiveGateway, usageRecord } from '../../helpers/gateway-service.ts';

const DAY = 86_400_000;
const KIB = 1024;
const QUOTA = 1024 * KIB;

let seq = 0;

/** One turn: a user message written the short way (its id minted by the store) and one assistant message out. */
function turn(n: number, previousId?: string, extra: JsonObject[] = []): StoredRecord {
  const id = `resp_${process.pid.toString(16)}${(++seq).toString(16).padStart(6, '0')}`;
  return {
    id,
    previousId,
    input: [{ role: 'user', content: `question ${n}` }, ...extra],
    response: {
      id,
      object: 'response',
      created_at: 1_772_000_000 + n,
      status: 'completed',
      model: 'gpt-4o-mini',
      previous_response_id: previousId ?? null,
      store: true,
      output: [{ id: `msg_out${id.slice(4)}`, type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: `answer ${n}`, annotations: [] }] }],
      usage: { input_tokens: 10, output_tokens: 2, total_tokens: 12 },
    },
  };
}

/** An item's text, whichever way its content is written. */
function text(item: JsonObject): string {
  const content = item['content'];
  if (typeof content === 'string') return content;
  return ((content as JsonObject[])[0] as { text: string }).text;
}

/** The problem a promise rejects with. */
async function problemOf(promise: Promise<unknown>): Promise<HttpProblem> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof HttpProblem, `an HttpProblem, not ${String(err)}`);
    return err;
  }
  assert.fail('expected a rejection');
}

/** Counts the queries run through a handle. */
function counting(): { plugin: KyselyPlugin; count: () => number } {
  let n = 0;
  return {
    plugin: {
      transformQuery: (args) => {
        n++;
        return args.node;
      },
      transformResult: async (args) => args.result,
    },
    count: () => n,
  };
}

for (const kind of DB_KINDS) {
  describe(`stored responses (${kind})`, () => {
    let gw: LiveGateway;
    let store: ResponseStore;
    const clock = new ManualClock(Date.UTC(2026, 5, 1, 12));
    before(async () => {
      gw = await startLiveGateway(kind, { GATEWAY_STORED_BODIES_QUOTA_BYTES: String(QUOTA) }, { clock });
      store = gw.service.dataPlane.routes.responses;
    });
    after(() => gw.close());

    /** `n` turns, each continuing the one before. */
    async function chain(tenantId: string, n: number, into = store): Promise<StoredRecord[]> {
      const records: StoredRecord[] = [];
      for (let i = 1; i <= n; i++) {
        const record = turn(i, records.at(-1)?.id);
        await into.put(tenantId, record, 30 * DAY);
        records.push(record);
      }
      return records;
    }

    test('retrieve: the response as stored, through the SDK; an unknown id is a 404 in OpenAI\'s exact shape', async () => {
      const t = await gw.tenant({ providers: [] });
      const [record] = await chain(t.tenantId, 1);
      const got = await t.openai.responses.retrieve(record!.id);
      assert.equal(got.id, record!.id);
      assert.equal(got.output_text, 'answer 1', "the SDK's own convenience field, from the output as stored");
      const exact = await gw.api(`/v1/responses/${record!.id}`, { token: t.apiKey });
      assert.deepEqual(exact.body, record!.response, 'the response object as stored');
      await assert.rejects(t.openai.responses.retrieve('resp_nope'), (err: unknown) => {
        assert.ok(err instanceof OpenAI.NotFoundError);
        return true;
      });
      const raw = await gw.api('/v1/responses/resp_nope', { token: t.apiKey });
      assert.equal(raw.status, 404);
      assert.deepEqual(raw.body, { error: { message: "No response found with id 'resp_nope'.", type: 'invalid_request_error', param: null, code: 'not_found' } });
      // Ids that cannot be the gateway's are refused without a query, the same way; past the router's 100 characters, no route.
      assert.equal((await gw.api('/v1/responses/resp%20x%27', { token: t.apiKey })).body.error.message, "No response found with id 'resp x''.");
      assert.equal((await gw.api(`/v1/responses/resp_${'a'.repeat(120)}`, { token: t.apiKey })).body.error.code, 'malformed_request');
    });

    test('a write is read back at once by this process, before its insert has committed', async () => {
      const t = await gw.tenant({ providers: [] });
      const first = turn(1);
      // Not awaited: the next turn arrives while the first is still being written.
      const writing = store.put(t.tenantId, first, DAY);
      const [got, expanded] = await Promise.all([store.get(t.tenantId, first.id), store.expand(t.tenantId, first.id, 1024 * KIB)]);
      await writing;
      assert.deepEqual(got, first.response);
      assert.deepEqual(expanded.items.map(text), ['question 1', 'answer 1']);
    });

    test('delete: OpenAI\'s deleted object, then 404 for retrieve, delete and input_items', async () => {
      const t = await gw.tenant({ providers: [] });
      const [a, b] = [turn(1), turn(1)];
      await store.put(t.tenantId, a, DAY);
      await store.put(t.tenantId, b, DAY);
      const raw = await gw.api(`/v1/responses/${a.id}`, { method: 'DELETE', token: t.apiKey });
      assert.equal(raw.status, 200);
      assert.deepEqual(raw.body, { id: a.id, object: 'response.deleted', deleted: true });
      await t.openai.responses.delete(b.id);
      for (const id of [a.id, b.id]) {
        await assert.rejects(t.openai.responses.retrieve(id), OpenAI.NotFoundError);
        await assert.rejects(t.openai.responses.delete(id), OpenAI.NotFoundError);
        await assert.rejects(t.openai.responses.inputItems.list(id), OpenAI.NotFoundError);
      }
    });

    test('input_items: the chain\'s items then this turn\'s, in both orders, paged by the SDK; ids minted where the client gave none', async () => {
      const t = await gw.tenant({ providers: [] });
      const call = { type: 'function_call_output', call_id: 'call_1', output: 'tool says hi' };
      const own = { id: 'fco_client_given', type: 'function_call_output', call_id: 'call_2', output: 'kept id' };
      const first = turn(1);
      const second = turn(2, first.id, [call]);
      const third = turn(3, second.id, [own]);
      for (const r of [first, second, third]) await store.put(t.tenantId, r, DAY);
      const stem = (r: StoredRecord) => r.id.slice('resp_'.length);
      const asc = [
        `msg_${stem(first)}_in0`,
        `msg_out${first.id.slice(4)}`,
        `msg_${stem(second)}_in0`,
        `fco_${stem(second)}_in1`,
        `msg_out${second.id.slice(4)}`,
        `msg_${stem(third)}_in0`,
        'fco_client_given',
      ];

      const all: string[] = [];
      for await (const item of t.openai.responses.inputItems.list(third.id, { order: 'asc', limit: 2 })) all.push(item.id!);
      assert.deepEqual(all, asc, 'oldest first, the SDK following has_more and the last id');
      const desc: string[] = [];
      for await (const item of t.openai.responses.inputItems.list(third.id, { limit: 3 })) desc.push(item.id!);
      assert.deepEqual(desc, asc.toReversed(), 'desc by default');

      const page = await gw.api(`/v1/responses/${third.id}/input_items?order=asc&limit=3&after=${asc[1]}`, { token: t.apiKey });
      assert.equal(page.status, 200);
      assert.deepEqual(
        { object: page.body.object, ids: page.body.data.map((i: JsonObject) => i['id']), first: page.body.first_id, last: page.body.last_id, more: page.body.has_more },
        { object: 'list', ids: asc.slice(2, 5), first: asc[2], last: asc[4], more: true },
      );
      // A message written the short way is listed as OpenAI lists it; items go upstream as stored.
      assert.deepEqual(page.body.data[0], { id: asc[2], role: 'user', content: [{ type: 'input_text', text: 'question 2' }], type: 'message' });
      assert.deepEqual(page.body.data[1], { id: asc[3], ...call });
      const last = await gw.api(`/v1/responses/${third.id}/input_items?order=asc&after=${asc[4]}&include=reasoning.encrypted_content`, { token: t.apiKey });
      assert.deepEqual([last.body.data.length, last.body.has_more], [2, false]);
      const none = await gw.api(`/v1/responses/${third.id}/input_items?after=${asc[0]}`, { token: t.apiKey });
      assert.deepEqual(none.body, { object: 'list', data: [], first_id: null, last_id: null, has_more: false }, 'nothing is older than the oldest');

      for (const [query, param] of [
        ['limit=0', 'limit'],
        ['limit=101', 'limit'],
        ['limit=ten', 'limit'],
        ['order=up', 'order'],
        ['after=msg_nowhere', 'after'],
      ] as const) {
        const r = await gw.api(`/v1/responses/${third.id}/input_items?${query}`, { token: t.apiKey });
        assert.equal(r.status, 400, query);
        assert.equal(r.body.error.param, param, query);
        assert.equal(r.body.error.type, 'invalid_request_error');
      }
    });

    test("tenant isolation: another tenant's id is a 404 on all three, and stays whole", async () => {
      const a = await gw.tenant({ providers: [] });
      const b = await gw.tenant({ providers: [] });
      const [record] = await chain(a.tenantId, 1);
      const id = record!.id;
      for (const [method, path] of [
        ['GET', `/v1/responses/${id}`],
        ['DELETE', `/v1/responses/${id}`],
        ['GET', `/v1/responses/${id}/input_items`],
      ] as const) {
        const r = await gw.api(path, { method, token: b.apiKey });
        assert.equal(r.status, 404, `${method} ${path}`);
        assert.equal(r.body.error.message, `No response found with id '${id}'.`);
      }
      assert.equal((await problemOf(store.expand(b.tenantId, id, QUOTA))).code, 'previous_response_not_found');
      assert.equal((await a.openai.responses.retrieve(id)).id, id);
    });

    test('sealed at rest: the row holds no prompt text, and a row copied to another tenant does not open', async () => {
      const a = await gw.tenant({ providers: [] });
      const b = await gw.tenant({ providers: [] });
      const record = turn(1);
      record.input = [{ role: 'user', content: 'the launch code is heron-42' }];
      await store.put(a.tenantId, record, DAY);
      const db = gw.service.deps.db;
      const row = await db.selectFrom('stored_responses').selectAll().where('tenant_id', '=', a.tenantId).where('id', '=', record.id).executeTakeFirstOrThrow();
      assert.ok(!row.sealed.includes('heron') && !Buffer.from(row.sealed, 'base64url').toString('latin1').includes('heron'), 'no prompt text in the sealed column');
      assert.equal(Number(row.bytes), row.sealed.length);
      assert.equal(Number(row.expires_at), clock.now() + DAY);
      await db.insertInto('stored_responses').values({ ...row, tenant_id: b.tenantId }).execute();
      const moved = await gw.api(`/v1/responses/${record.id}`, { token: b.apiKey });
      assert.equal(moved.status, 500);
      assert.equal(moved.body.error.code, 'stored_response_unreadable');
      assert.ok(!JSON.stringify(moved.body).includes('heron'));
    });

    test('expand: 100 turns in one query, oldest first, with the first id; bounded by turns and bytes', async () => {
      const t = await gw.tenant({ providers: [] });
      const queries = counting();
      const counted = new ResponseStore({ db: gw.service.deps.db.withPlugin(queries.plugin), clock, encryptionKeys: [gw.service.deps.config.encryptionKey] });
      const records = await chain(t.tenantId, 100, counted);
      const before = queries.count();
      const expanded = await counted.expand(t.tenantId, records.at(-1)!.id, 64 * 1024 * KIB);
      assert.equal(queries.count() - before, 1, 'one query for the whole chain');
      assert.equal(expanded.turns, 100);
      assert.equal(expanded.firstId, records[0]!.id);
      assert.deepEqual(
        expanded.items.map(text),
        records.flatMap((_, i) => [`question ${i + 1}`, `answer ${i + 1}`]),
      );
      assert.equal(expanded.items[0]!['id'], `msg_${records[0]!.id.slice(5)}_in0`, 'ids as stored: the route strips them');

      const sealed = await gw.service.deps.db.selectFrom('stored_responses').select('bytes').where('tenant_id', '=', t.tenantId).execute();
      const total = sealed.reduce((sum, r) => sum + Number(r.bytes), 0);
      assert.equal((await store.expand(t.tenantId, records.at(-1)!.id, total)).turns, 100, 'exactly at the bound');
      const large = await problemOf(store.expand(t.tenantId, records.at(-1)!.id, total - 1));
      assert.deepEqual([large.status, large.code, large.param], [400, 'previous_response_chain_too_large', 'previous_response_id']);

      // One more turn than the bound, written straight into the table (expand refuses before it opens any).
      const long = await gw.tenant({ providers: [] });
      const rows = Array.from({ length: MAX_CHAIN_TURNS + 1 }, (_, i) => ({
        tenant_id: long.tenantId,
        id: `resp_long${i}`,
        previous_id: i === 0 ? null : `resp_long${i - 1}`,
        created_at: clock.now(),
        expires_at: clock.now() + DAY,
        bytes: 1,
        sealed: 'x',
      }));
      for (let i = 0; i < rows.length; i += 500) await gw.service.deps.db.insertInto('stored_responses').values(rows.slice(i, i + 500)).execute();
      const started = performance.now();
      const tooLong = await problemOf(store.expand(long.tenantId, `resp_long${MAX_CHAIN_TURNS}`, 1024 * 1024 * KIB));
      assert.deepEqual([tooLong.status, tooLong.code], [400, 'previous_response_chain_too_long']);
      // Each step a primary-key lookup: about 40 ms here on SQLite, 90 ms on PostgreSQL; a plan that scanned the tenant's rows at each step took 13 s.
      const ms = performance.now() - started;
      assert.ok(ms < 2000, `${MAX_CHAIN_TURNS + 1} turns walked in ${Math.round(ms)} ms`);
    });

    test('a deleted ancestor: expand fails cleanly with OpenAI\'s 400; input_items lists what is left', async () => {
      const t = await gw.tenant({ providers: [] });
      const [first, , third] = await chain(t.tenantId, 3);
      assert.equal(await store.delete(t.tenantId, first!.id), true);
      const problem = await problemOf(store.expand(t.tenantId, third!.id, QUOTA));
      assert.deepEqual(
        openaiErrorBody(problem),
        {
          error: {
            message: `Previous response with id '${third!.id}' not found. It continues the response '${first!.id}', which was deleted or has expired.`,
            type: 'invalid_request_error',
            code: 'previous_response_not_found',
            param: 'previous_response_id',
          },
        },
      );
      assert.equal(problem.status, 400);
      const unknown = await problemOf(store.expand(t.tenantId, 'resp_unknown', QUOTA));
      assert.equal(unknown.message, "Previous response with id 'resp_unknown' not found.");
      const left: string[] = [];
      for await (const item of t.openai.responses.inputItems.list(third!.id, { order: 'asc' })) left.push(text(item as unknown as JsonObject));
      assert.deepEqual(left, ['question 2', 'answer 2', 'question 3']);
      assert.equal(await store.delete(t.tenantId, first!.id), false, 'deleted once');
    });

    test('retention per tenant through the control plane (default 30 days, 1 to 3650), then expiry and the purge', async () => {
      const t = await gw.tenant({ providers: [] });
      const tenants = gw.service.dataPlane.routes.tenants;
      assert.equal(responseRetentionMs((await tenants.get(t.tenantId))!.settings), 30 * DAY);
      const patch = (responses: unknown) => gw.api('/api/v1/tenant', { method: 'PATCH', token: t.session, body: { settings: { responses } } });
      const set = await patch({ retention_days: 7 });
      assert.equal(set.status, 200);
      assert.deepEqual(set.body.settings.responses, { retention_days: 7 });
      assert.equal(responseRetentionMs((await tenants.get(t.tenantId))!.settings), 7 * DAY, 'the data plane sees it at once');
      for (const bad of [{ retention_days: 0 }, { retention_days: 3651 }, { retention_days: 1.5 }, { retention: 7 }]) {
        const r = await patch(bad);
        assert.equal(r.status, 400, JSON.stringify(bad));
      }

      const record = turn(1);
      await store.put(t.tenantId, record, responseRetentionMs((await tenants.get(t.tenantId))!.settings));
      const next = turn(2, record.id);
      await store.put(t.tenantId, next, 30 * DAY);
      clock.advance(7 * DAY - 1);
      assert.deepEqual(await store.get(t.tenantId, record.id), record.response, 'kept for the whole retention');
      clock.advance(1);
      assert.equal(await store.get(t.tenantId, record.id), undefined, 'gone at expires_at');
      assert.equal((await gw.api(`/v1/responses/${record.id}/input_items`, { token: t.apiKey })).status, 404);
      assert.equal((await problemOf(store.expand(t.tenantId, next.id, QUOTA))).code, 'previous_response_not_found', 'its successor cannot be continued');
      clock.advance(1);
      const removed = await purgeGateway(gw.service.deps);
      assert.ok((removed['stored_responses'] ?? 0) >= 1);
      const left = await gw.service.deps.db.selectFrom('stored_responses').select('id').where('tenant_id', '=', t.tenantId).execute();
      assert.deepEqual(left.map((r) => r.id), [next.id], 'the purge removed the expired row only');

      assert.equal((await patch(null)).status, 200);
      assert.equal(responseRetentionMs((await tenants.get(t.tenantId))!.settings), 30 * DAY, 'null: the default again');
    });

    test('the storage quota: responses and bodies share it; full, a store: true request is refused before upstream; deleting frees room at the next load', async () => {
      const t = await gw.tenant({ providers: ['openai'] });
      const tenants = gw.service.dataPlane.routes.tenants;
      const db = gw.service.deps.db;
      assert.equal(responseRoomLeft((await tenants.get(t.tenantId))!), true);
      const big = (n: number) => {
        const r = turn(n);
        r.input = [{ role: 'user', content: 'x'.repeat(400 * KIB) }];
        return r;
      };
      const [one, two] = [big(1), big(2)];
      await store.put(t.tenantId, one, DAY);
      assert.equal(responseRoomLeft(tenants.peek(t.tenantId)!), true, 'about 530 KiB of 1 MiB');
      await store.put(t.tenantId, two, DAY);
      assert.equal(responseRoomLeft(tenants.peek(t.tenantId)!), false, 'taken on this replica as it was stored');
      const counted = await storedResponseBytes(db, t.tenantId, clock.now());
      assert.ok(counted > QUOTA, `${counted} bytes counted`);

      // Reloaded (turning body storage on reloads it): counted from the database, and bodies find the quota full too.
      assert.equal((await gw.api('/api/v1/tenant', { method: 'PATCH', token: t.session, body: { store_bodies: true } })).status, 200);
      assert.equal(responseRoomLeft((await tenants.get(t.tenantId))!), false);
      const { response } = await t.openai.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }).withResponse();
      assert.equal((await usageRecord(gw, response.headers.get('x-gateway-request-id')!)).body_storage, 'quota_full');

      const refusal = responseStorageFull();
      assert.equal(refusal.status, 403);
      assert.deepEqual(openaiErrorBody(refusal).error.code, 'response_storage_full');
      assert.match(refusal.message, /delete stored responses .*or send store: false/);

      await t.openai.responses.delete(one.id);
      assert.equal(responseRoomLeft(tenants.peek(t.tenantId)!), false, 'this context still counts it');
      tenants.invalidate(t.tenantId);
      assert.equal(responseRoomLeft((await tenants.get(t.tenantId))!), true, 'the next load finds room');
    });
  });

  describe(`stored responses and key rotation (${kind})`, () => {
    test('npm run rotate-keys reseals stored responses under the new key; run again, nothing is left', async (t) => {
      const OLD = 'b'.repeat(64); // the live helper's key
      const NEW = 'c'.repeat(64);
      const key = (hex: string) => Buffer.from(hex, 'hex');
      const gw = await startLiveGateway(kind);
      t.after(() => gw.close());
      const store = gw.service.dataPlane.routes.responses;
      const a: LiveTenant = await gw.tenant({ providers: [] });
      const records = [turn(1), turn(2)];
      for (const r of records) await store.put(a.tenantId, r, DAY);
      const env = {
        DATA_DIR: gw.db.dataDir,
        GATEWAY_ALLOW_PRIVATE_UPSTREAMS: '127.0.0.1',
        GATEWAY_ENCRYPTION_KEY: NEW,
        GATEWAY_ENCRYPTION_KEY_PREVIOUS: OLD,
        ...(gw.db.url ? { GATEWAY_DATABASE_URL: gw.db.url } : {}),
      };
      const find = async () => (await gatewayService.configure(env).rotateKeys()).find((c) => c.what === 'gateway stored responses')!;
      const first = await find();
      assert.deepEqual({ resealed: first.resealed, current: first.current, unreadable: first.unreadable }, { resealed: 2, current: 0, unreadable: [] });
      const { db, clock } = gw.service.deps;
      const fresh = new ResponseStore({ db, clock, encryptionKeys: [key(NEW)] });
      assert.deepEqual(await fresh.get(a.tenantId, records[0]!.id), records[0]!.response);
      assert.equal((await fresh.expand(a.tenantId, records[1]!.id, QUOTA)).turns, 1);
      const old = new ResponseStore({ db, clock, encryptionKeys: [key(OLD)] });
      assert.equal((await problemOf(old.get(a.tenantId, records[0]!.id))).code, 'stored_response_unreadable', 'the old key opens nothing now');
      const again = await find();
      assert.deepEqual({ resealed: again.resealed, current: again.current }, { resealed: 0, current: 2 });
    });
  });
}

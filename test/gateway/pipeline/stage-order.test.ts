import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type LiveGateway, type LiveTenant, startLiveGateway, usageRecord } from '../../helpers/gateway-service.ts';
import { newClock } from './budget-calls.ts';

/** An assistant turn that compaction's whitespace rule rewrites, and a latest question: the history to compact. */
const messages = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'First question.' },
  { role: 'assistant', content: 'An answer   \n\n\n\n\nwith trailing spaces   ' },
  { role: 'user', content: 'Second question.' },
];

/**
 * The cheapest refusals come first (issue 31, defect 1's second half): a
 * model the tenant cannot call and a key over its requests per minute are
 * refused before compaction and routing spend anything on the call (a key
 * limited to one request a minute burnt over a second of compaction per
 * refused call). Tokens per day and USD per month, which need the routed
 * model's price and the compacted prompt, are still checked after routing.
 */
describe('the order of refusals', () => {
  let gw: LiveGateway;
  let tenant: LiveTenant;
  before(async () => {
    gw = await startLiveGateway('sqlite', { GATEWAY_RETRIES: '0', GATEWAY_DEFAULT_FALLBACKS: '0' }, { clock: newClock() });
    tenant = await gw.tenant({ providers: ['openai'] });
  });
  after(() => gw.close());

  const call = async (apiKey: string, model: string, headers: Record<string, string>, content?: unknown[]) => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}`, ...headers },
      body: JSON.stringify({ model, messages: content ?? messages, max_tokens: 10 }),
    });
    const body = JSON.parse(await res.text());
    return { status: res.status, code: body.error?.code as string | undefined, headers: res.headers };
  };

  const keyWith = async (limits: Record<string, number>) => {
    const created = await gw.api('/api/v1/tenant/api-keys', { token: tenant.session, body: { name: `limited ${Math.random()}` } });
    const patched = await gw.api(`/api/v1/tenant/api-keys/${created.body.id}`, { method: 'PATCH', token: tenant.session, body: { limits } });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    return created.body.key as string;
  };

  test('over its requests per minute, a call is refused before compaction: nothing compacted, nothing recorded as compacted', async () => {
    const key = await keyWith({ requests_per_minute: 1 });
    const admitted = await call(key, 'openai/gpt-4o-mini', { 'x-gateway-compact': 'safe' });
    assert.equal(admitted.status, 200);
    assert.equal(admitted.headers.get('x-gateway-compaction'), 'whitespace');
    const refused = await call(key, 'openai/gpt-4o-mini', { 'x-gateway-compact': 'safe' });
    assert.equal(refused.status, 429);
    assert.equal(refused.code, 'rate_limit_exceeded');
    assert.equal(refused.headers.get('x-gateway-compaction'), 'none', 'compaction never ran');
    const record = await usageRecord(gw, refused.headers.get('x-gateway-request-id')!);
    assert.equal(record.status, 429);
    assert.equal(record.compaction, 'none');
  });

  test('a model the tenant has no key for is refused before compaction, and before its rate counts', async () => {
    const key = await keyWith({ requests_per_minute: 1 });
    // A budget no prompt can meet: were compaction first, this would be compaction_budget_unreachable.
    const noKey = await call(key, 'anthropic/claude-sonnet-4-5', { 'x-gateway-compact': '100' }, [{ role: 'system', content: 'word '.repeat(500) }, ...messages]);
    assert.equal(noKey.status, 400);
    assert.equal(noKey.code, 'provider_key_missing');
    const unknown = await call(key, 'no-such-model-anywhere', {});
    assert.equal(unknown.code, 'model_not_found');
    const auto = await call(key, 'auto', { 'x-gateway-no-route': 'true' });
    assert.equal(auto.code, 'route_required');
    assert.equal((await call(key, 'openai/gpt-4o-mini', {})).status, 200, 'the refused calls did not count against the one request a minute');
  });

  test('tokens and USD are checked after routing; a call refused by them still counts against requests per minute', async () => {
    const key = await keyWith({ requests_per_minute: 2, usd_per_month: 0 });
    const first = await call(key, 'openai/gpt-4o-mini', {});
    assert.equal(first.code, 'budget_exceeded');
    assert.equal(first.headers.get('x-ratelimit-remaining-requests'), '1', 'admitted by the rate, with its headers');
    assert.equal((await call(key, 'openai/gpt-4o-mini', {})).code, 'budget_exceeded');
    assert.equal((await call(key, 'openai/gpt-4o-mini', {})).code, 'rate_limit_exceeded');
  });
});

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type OpenAI from 'openai';
import { CONSOLE_CSP } from '../../../src/gateway/console/layout.ts';
import type { UsageRecordRow } from '../../../src/gateway/schema.ts';
import { createFakeProvider, type FakeProvider } from '../../../tools/fake-provider/server.ts';
import { DB_KINDS } from '../../helpers/env.ts';
import { type LiveGateway, type LiveTenant, startLiveGateway, usageRecord } from '../../helpers/gateway-service.ts';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.ts';

/** The page's text: tags dropped, the entities our escaping makes decoded, spaces collapsed. */
function text(html: string): string {
  return html
    .replace(/<[^>]*>/g, ' ')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&')
    .replace(/\s+/g, ' ')
    .trim();
}

/** The ids of the log's rows, in order. */
const rowIds = (html: string): string[] => [...(/<tbody>([\s\S]*?)<\/tbody>/.exec(html)?.[1] ?? '').matchAll(/<tr>\s*<td class="nowrap"><a href="\/requests\/([^"]+)"/g)].map((m) => decodeURIComponent(m[1]!));

/** One section of a request's page (cache, compaction, routing, attempts, cost, tokens, latency, bodies). */
function section(html: string, slug: string): string {
  const start = html.indexOf(`<section aria-labelledby="${slug}-title"`);
  assert.ok(start >= 0, `no ${slug} section`);
  return html.slice(start, html.indexOf('</section>', start));
}

/** The value of a fact (`<dt>label</dt><dd>…</dd>`) of a section, as text. */
function fact(html: string, slug: string, label: string): string {
  const escaped = label.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/’/g, '’');
  const m = new RegExp(`<dt>${escaped}</dt><dd[^>]*>([\\s\\S]*?)</dd>`).exec(slug === '' ? html : section(html, slug));
  assert.ok(m, `no "${label}" in ${slug || 'the summary'}`);
  return text(m[1]!);
}

/** An `<a>` to the log filtered by `name=value` in this HTML. */
const linksTo = (html: string, name: string, value: string) => html.includes(`href="/requests?${new URLSearchParams({ [name]: value }).toString().replace(/&/g, '&amp;')}"`);

/** USD as the pages write it (request-format.ts), recomputed here for the figures the records hold. */
function usd(n: number): string {
  if (n === 0) return '$0';
  if (n >= 1) return `$${n.toFixed(2)}`;
  if (n >= 0.01) return `$${n.toFixed(4)}`;
  return `$${n.toFixed(Math.min(12, 2 - Math.floor(Math.log10(n))))}`;
}

for (const kind of DB_KINDS) {
  describe(`console: the request log (${kind})`, () => {
    let gw: TestGateway;
    let a: { tenantId: string; session: string; apiKeyId: string; cookie: string };
    let b: { tenantId: string; cookie: string };
    let ciKey: string;
    const base = Date.UTC(2026, 2, 1, 8);
    /** Tenant A's 120 records, a minute apart from 08:00 UTC (the clock stands at 12:00): a call's shape follows its number. */
    const seed = (i: number): Partial<UsageRecordRow> & { request_id: string; tenant_id: string; created_at: number } => ({
      request_id: `a-${String(i).padStart(3, '0')}`,
      tenant_id: a.tenantId,
      created_at: base + i * 60_000,
      key_id: i % 10 === 0 ? ciKey : a.apiKeyId,
      tag: i % 3 === 0 ? 'nightly' : null,
      session_id: i >= 40 && i < 45 ? 'sess-7' : null,
      status: i % 15 === 0 ? 429 : 200,
      error_code: i % 15 === 0 ? 'rate_limit_exceeded' : null,
      cache_status: i % 4 === 1 ? 'hit' : 'miss',
      model_requested: i % 5 === 0 ? 'auto' : 'gpt-4o-mini',
      model_used: i % 5 === 0 ? 'openai/gpt-5-nano' : 'openai/gpt-4o-mini',
      prompt_tokens: 1000 + i,
      completion_tokens: 50,
      cost_usd: 0.000123,
      cost_saved_usd: i % 4 === 1 ? 0.0005 : 0,
    });
    const all = Array.from({ length: 120 }, (_, i) => i);
    const idsOf = (keep: (i: number) => boolean) => all.filter(keep).reverse().map((i) => `a-${String(i).padStart(3, '0')}`);

    before(async () => {
      gw = await startTestGateway(kind);
      const sa = await gw.signup(undefined, 'Acme');
      a = { tenantId: sa.tenantId, session: sa.session, apiKeyId: sa.apiKeyId, cookie: `gw_console=${sa.session}` };
      const sb = await gw.signup(undefined, 'Beta');
      b = { tenantId: sb.tenantId, cookie: `gw_console=${sb.session}` };
      const ci = await gw.request('POST', '/api/v1/tenant/api-keys', { token: a.session, body: { name: 'CI <runner>' } });
      ciKey = ci.body.id;
      const unused = await gw.request('POST', '/api/v1/tenant/api-keys', { token: a.session, body: { name: 'never used' } });
      for (const id of [ciKey, unused.body.id]) assert.equal((await gw.request('DELETE', `/api/v1/tenant/api-keys/${id}`, { token: a.session })).status, 204);
      for (const i of all) await gw.insertUsage(seed(i));
      await gw.insertUsage({ tenant_id: b.tenantId, request_id: 'b-secret', created_at: base + 30 * 60_000, tag: 'nightly' });
    });
    after(() => gw.close());

    const page = (path: string, cookie = a.cookie) => gw.request('GET', path, { headers: { cookie } });

    test('newest first, 50 a page; Older and Newest keep the filters; each row links to its page', async () => {
      const first = await page('/requests');
      assert.equal(first.status, 200);
      assert.equal(first.headers['content-security-policy'], CONSOLE_CSP);
      assert.deepEqual(rowIds(first.text), idsOf(() => true).slice(0, 50));
      assert.match(first.text, /<a href="\/requests\/a-119"><time datetime="2026-03-01T09:59:00.000Z">2026-03-01<br>09:59:00<\/time><\/a>/);
      assert.doesNotMatch(first.text, /b-secret/);
      assert.doesNotMatch(first.text, />Newest</, 'the first page has no way to the newest');
      // Filtered, then paged: the Older link carries the filter and the cursor; Newest drops the cursor only.
      const filtered = await page('/requests?tag=nightly&status=ok');
      const expected = idsOf((i) => i % 3 === 0 && i % 15 !== 0);
      assert.deepEqual(rowIds(filtered.text), expected.slice(0, 32));
      assert.doesNotMatch(filtered.text, /rel="next"/, '32 calls: one page');
      const seen: string[] = [];
      let path: string | undefined = '/requests?model=gpt-4o-mini';
      let pages = 0;
      while (path) {
        const r = await page(path);
        assert.equal(r.status, 200, path);
        seen.push(...rowIds(r.text));
        if (pages > 0) assert.match(r.text, /<a href="\/requests\?model=gpt-4o-mini">Newest<\/a>/);
        path = /<a href="([^"]+)" rel="next">Older<\/a>/.exec(r.text)?.[1]?.replace(/&amp;/g, '&');
        if (path) assert.match(path, /^\/requests\?model=gpt-4o-mini&cursor=[A-Za-z0-9_-]+$/);
        pages++;
      }
      assert.deepEqual(seen, idsOf((i) => i % 5 !== 0));
      assert.equal(pages, 2);
    });

    test('a row: status with its error code, model asked and answered, key name, tag and session linking to the log, cache, tokens, cost, saved', async () => {
      const r = await page('/requests?session_id=sess-7');
      assert.deepEqual(rowIds(r.text), ['a-044', 'a-043', 'a-042', 'a-041', 'a-040']);
      const row = (id: string) => text(new RegExp(`<tr>\\s*<td class="nowrap"><a href="/requests/${id}">[\\s\\S]*?</tr>`).exec(r.text)![0]);
      assert.equal(row('a-041'), '2026-03-01 08:41:00 200 gpt-4o-mini → answered by openai/gpt-4o-mini default none sess-7 hit 1,041 / 50 $0.000123 $0.000500 101 ms');
      assert.equal(row('a-040'), '2026-03-01 08:40:00 200 auto → answered by openai/gpt-5-nano CI <runner> (revoked) none sess-7 miss 1,040 / 50 $0.000123 none 101 ms');
      const limited = await page('/requests?status=429&tag=nightly');
      assert.match(limited.text, /<span class="status error">429<\/span><br><code class="small">rate_limit_exceeded<\/code>/);
      assert.ok(linksTo(limited.text, 'tag', 'nightly'));
      assert.ok(linksTo(r.text, 'session_id', 'sess-7'));
      assert.match(r.text, /CI &lt;runner&gt; \(revoked\)/, 'names are escaped');
    });

    test('each filter narrows the log, and the form shows what it holds', async () => {
      const cases: [string, (i: number) => boolean, RegExp][] = [
        ['status=error', (i) => i % 15 === 0, /<option value="error" selected>/],
        ['status=4xx', (i) => i % 15 === 0, /<option value="4xx" selected>/],
        ['status=429', (i) => i % 15 === 0, /<option value="429" selected>/],
        ['status=ok', (i) => i % 15 !== 0, /<option value="ok" selected>/],
        ['status=5xx', () => false, /<option value="5xx" selected>/],
        ['status=418', () => false, /<option value="418" selected>418<\/option>/],
        ['cache_status=hit', (i) => i % 4 === 1, /<option value="hit" selected>/],
        ['cache_status=dedup', () => false, /<option value="dedup" selected>/],
        [`key_id=${'CI'}`, () => false, /<option value="CI" selected>CI \(no key of this workspace\)<\/option>/],
        ['model=openai/gpt-5-nano', (i) => i % 5 === 0, /name="model" value="openai\/gpt-5-nano"/],
        ['model=auto', (i) => i % 5 === 0, /name="model" value="auto"/],
        ['tag=nightly', (i) => i % 3 === 0, /name="tag" value="nightly"/],
        ['session_id=sess-7', (i) => i >= 40 && i < 45, /name="session_id" value="sess-7"/],
        ['from=2026-03-01T09:00:00Z&to=2026-03-01T09:05:00Z', (i) => i >= 60 && i < 65, /name="to" value="2026-03-01T09:05:00Z"/],
      ];
      for (const [query, keep, form] of cases) {
        const r = await page(`/requests?${query}`);
        assert.equal(r.status, 200, query);
        assert.deepEqual(rowIds(r.text), idsOf(keep).slice(0, 50), query);
        assert.match(r.text, form, query);
      }
      const byKey = await page(`/requests?key_id=${ciKey}`);
      assert.deepEqual(rowIds(byKey.text), idsOf((i) => i % 10 === 0));
      assert.match(byKey.text, new RegExp(`<option value="${ciKey}" selected>CI &lt;runner&gt; \\(sk-gw-[A-Za-z0-9_-]{4}…, revoked\\)</option>`));
    });

    test('the key select: live keys, then revoked keys that records name; a revoked key no record names is left out', async () => {
      const r = await page('/requests');
      const select = /<select id="f-key"[\s\S]*?<\/select>/.exec(r.text)![0];
      const options = [...select.matchAll(/<option value="([^"]*)"[^>]*>([^<]*)<\/option>/g)].map((m) => [m[1], text(m[2]!)]);
      assert.deepEqual(
        options.map(([value, label]) => [value, label!.replace(/sk-gw-[A-Za-z0-9_-]{4}/, 'sk-gw-…')]),
        [
          ['', 'Any key'],
          [a.apiKeyId, 'default (sk-gw-……)'],
          [ciKey, 'CI <runner> (sk-gw-……, revoked)'],
        ],
      );
      assert.doesNotMatch(r.text, /never used/);
    });

    test('times typed without a zone are read as UTC, as the form says, whatever the server’s zone', async (t) => {
      // JavaScript reads a date-time without a zone in the process's zone: this one is not UTC.
      const zone = process.env['TZ'];
      process.env['TZ'] = 'America/New_York';
      t.after(() => {
        if (zone === undefined) delete process.env['TZ'];
        else process.env['TZ'] = zone;
      });
      assert.notEqual(new Date('2026-03-01T09:30').getTime(), Date.UTC(2026, 2, 1, 9, 30));
      const r = await page(`/requests?${new URLSearchParams({ from: '2026-03-01 09:30', to: '2026-03-01T09:33' })}`);
      assert.equal(r.status, 200);
      assert.deepEqual(rowIds(r.text), ['a-092', 'a-091', 'a-090']);
      assert.match(r.text, /name="from" value="2026-03-01 09:30"/, 'the value is shown as typed');
      const day = await page('/requests?from=2026-03-01&to=2026-03-01T08:02:00.000Z');
      assert.deepEqual(rowIds(day.text), ['a-001', 'a-000']);
    });

    test('nothing found: the page says so, over which range, and how to widen it', async () => {
      const r = await page('/requests?tag=nightly&cache_status=dedup');
      assert.equal(r.status, 200);
      assert.doesNotMatch(r.text, /<table class="log-table"/);
      const words = text(r.text);
      assert.match(words, /No calls match these filters from 30 Jan 2026, 12:00 UTC to 1 Mar 2026, 12:00 UTC \./);
      assert.ok(r.text.includes('<a href="/requests?cache_status=dedup">Without Tag = nightly</a>'));
      assert.ok(r.text.includes('<a href="/requests?tag=nightly">Without Cache = dedup</a>'));
      assert.match(words, /An earlier From/);
      const fresh = await page('/requests', `gw_console=${(await gw.signup()).session}`);
      assert.match(text(fresh.text), /No calls match from .* Calls made with this workspace’s API keys appear here/);
    });

    test('bad values: the page again, 400, the error next to its field; never a 500', async () => {
      const cases: [string, string, RegExp][] = [
        ['from=yesterday', 'f-from', /from must be an ISO 8601 time/],
        ['to=2026-02-30T25:00', 'f-to', /to must be an ISO 8601 time/],
        ['from=2026-03-02&to=2026-03-01', 'f-from', /from must not be later than to/],
        ['status=teapot', 'f-status', /status must be ok \(2xx\), error \(any other\), 4xx, 5xx or one HTTP status code/],
        ['status=ok&status=error', 'f-status', /Status is given more than once/],
        ['cache_status=warm', 'f-cache', /cache_status must be hit, miss, dedup, bypass or partial/],
        [`tag=${'x'.repeat(300)}`, 'f-tag', /Tag is longer than 256 characters/],
      ];
      for (const [query, id, message] of cases) {
        const r = await page(`/requests?${query}`);
        assert.equal(r.status, 400, query);
        assert.equal(r.headers['content-security-policy'], CONSOLE_CSP);
        assert.match(r.text, /<h1>Requests<\/h1>/, query);
        assert.match(r.text, new RegExp(`id="${id}"[^>]*aria-describedby="[^"]*${id}-error"[^>]*aria-invalid="true"`), query);
        const error = new RegExp(`<p class="field-error" id="${id}-error" role="alert">([^<]*)</p>`).exec(r.text);
        assert.ok(error, `${query}: no error by ${id}`);
        assert.match(text(error[1]!), message, query);
        assert.doesNotMatch(r.text, /<table class="log-table"/, query);
      }
      // Several at once: each by its field.
      const several = await page('/requests?from=soon&status=nope&cache_status=cold');
      assert.equal(several.status, 400);
      for (const id of ['f-from', 'f-status', 'f-cache']) assert.match(several.text, new RegExp(`id="${id}-error" role="alert"`));
      // A page link that is no longer valid: said at the top of the form, with the way back.
      for (const cursor of ['bm9wZQ', '***', 'x'.repeat(600)]) {
        const r = await page(`/requests?tag=nightly&cursor=${cursor}`);
        assert.equal(r.status, 400, cursor);
        assert.match(r.text, /<p class="form-error" role="alert">This page link is not one the request log made \(its cursor was changed or cut\)\. <a href="\/requests\?tag=nightly">Start again from the newest calls<\/a>\.<\/p>/, cursor);
      }
    });

    test('no inline script, handler or style; without a session, /sign-in', async () => {
      for (const path of ['/requests', '/requests?status=teapot', '/requests/a-001', '/requests/none']) {
        const r = await page(path);
        for (const script of r.text.match(/<script\b[^>]*>/g) ?? []) assert.match(script, /\bsrc="\/assets\//, `${path}: ${script}`);
        assert.doesNotMatch(r.text, /<style\b|\sstyle=|\son[a-z]+=/i, path);
        assert.equal(r.headers['cache-control'], 'no-store', path);
        assert.equal((await gw.request('GET', path)).headers['location'], '/sign-in', path);
      }
    });

    test("a request's page: every stage; bodies escaped and pretty-printed when kept, else how to keep them", async () => {
      await gw.insertUsage({
        tenant_id: a.tenantId,
        request_id: 'rich',
        created_at: base + 200 * 60_000 + 123,
        key_id: ciKey,
        tag: 'nightly',
        session_id: 'sess <&> 9',
        model_requested: 'openai/gpt-4o-mini',
        model_used: 'anthropic/claude-haiku-4-5',
        provider: 'anthropic',
        route_reason: 'fallback from openai/gpt-4o-mini (upstream_error)',
        attempts: JSON.stringify([
          { model: 'openai/gpt-4o-mini', status: 500, errorCode: 'upstream_error', ms: 12.345 },
          { model: 'anthropic/claude-haiku-4-5', status: 200, ms: 300 },
        ]),
        compaction: 'whitespace,repeats',
        compaction_saved_tokens: 1234,
        saved_tokens: 1234,
        prompt_tokens: 5000,
        cached_tokens: 4000,
        cache_write_tokens: 10,
        completion_tokens: 300,
        reasoning_tokens: 20,
        cost_usd: 0.0021,
        cost_saved_usd: 0.00035,
        saved_compaction_usd: 0.00015,
        saved_prompt_cache_usd: 0.0002,
        // The provider's own caching, outside cost_saved_usd.
        saved_provider_cache_usd: 0.0012,
        overhead_ms: 1.25,
        upstream_ms: 312.4,
        stream: 1,
        request_body: '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"<script>alert(1)</script>"}]}',
        response_body: 'data: {"choices":[]}\n\ndata: [DONE]\n\n',
      });
      const r = await page('/requests/rich');
      assert.equal(r.status, 200);
      assert.match(r.text, /<h1 class="wrap">Request <code>rich<\/code><\/h1>/);
      assert.equal(fact(r.text, '', 'Time'), '2026-03-01 11:20:00.123 UTC');
      assert.equal(fact(r.text, '', 'Status'), '200 OK');
      assert.equal(fact(r.text, '', 'Answer'), 'streamed (server-sent events)');
      assert.match(fact(r.text, '', 'API key'), /^CI <runner> \(sk-gw-.{4}…, revoked\)$/);
      assert.equal(fact(r.text, '', 'Session'), 'sess <&> 9');
      for (const [name, value] of [['key_id', ciKey], ['tag', 'nightly'], ['session_id', 'sess <&> 9']] as const) assert.ok(linksTo(r.text, name, value), name);
      assert.equal(fact(r.text, 'cache', 'Status'), 'miss');
      assert.match(text(section(r.text, 'compaction')), /Strategies applied: whitespace: .* repeats: /);
      assert.equal(fact(r.text, 'compaction', 'Prompt tokens removed'), '1,234');
      assert.equal(fact(r.text, 'compaction', 'Saved'), '$0.000150');
      assert.equal(fact(r.text, 'routing', 'Model asked for'), 'openai/gpt-4o-mini');
      assert.equal(fact(r.text, 'routing', 'Model that answered'), 'anthropic/claude-haiku-4-5');
      assert.equal(fact(r.text, 'routing', 'Provider'), 'anthropic');
      assert.equal(fact(r.text, 'routing', 'Reason'), 'fallback from openai/gpt-4o-mini (upstream_error)');
      const attempts = text(section(r.text, 'attempts'));
      assert.match(attempts, /2 attempts over 2 models \(1 fallback\); anthropic\/claude-haiku-4-5 answered\./);
      assert.match(attempts, /1 openai\/gpt-4o-mini 500 upstream_error 12 ms 2 anthropic\/claude-haiku-4-5 200 none 300 ms/);
      assert.equal(fact(r.text, 'cost', 'Cost'), '$0.00210');
      assert.equal(fact(r.text, 'cost', 'Saved'), '$0.000350');
      assert.equal(fact(r.text, 'cost', 'Without the gateway'), '$0.00245');
      assert.match(text(section(r.text, 'cost')), /Response cache \(hit or dedup\) \$0 Compaction \$0\.000150 Routing \$0 Prompt-cache hints the gateway added \$0\.000200/);
      // Beside the gateway's saving, not in it ('Saved' and 'Without the gateway' above leave it out).
      assert.equal(fact(r.text, 'cost', 'The provider’s own caching'), '$0.00120 (saved by the provider’s prompt cache, not by the gateway: not in Saved)');
      const entry = (await gw.request('GET', '/api/v1/tenant/requests/rich', { token: a.session })).body;
      assert.deepEqual([entry.cost_saved_usd, entry.saved_provider_cache_usd], [0.00035, 0.0012], 'the request log gives it apart too');
      assert.equal(fact(r.text, 'tokens', 'Prompt'), '5,000');
      assert.equal(fact(r.text, 'tokens', 'of which read from the provider’s prompt cache'), '4,000');
      assert.equal(fact(r.text, 'tokens', 'Written to the provider’s prompt cache'), '10');
      assert.equal(fact(r.text, 'tokens', 'of which reasoning'), '20');
      assert.equal(fact(r.text, 'latency', 'Total'), '314 ms');
      assert.equal(fact(r.text, 'latency', 'Gateway overhead'), '1.3 ms');
      assert.equal(fact(r.text, 'latency', 'Upstream (the provider)'), '312 ms');
      const bodies = section(r.text, 'bodies');
      assert.ok(bodies.includes('<pre class="body" id="request-body" tabindex="0" role="region" aria-label="Request body">{\n  &quot;model&quot;: &quot;gpt-4o-mini&quot;,'), 'pretty-printed');
      assert.ok(bodies.includes('&lt;script&gt;alert(1)&lt;/script&gt;'), 'escaped');
      assert.doesNotMatch(r.text, /<script>alert/);
      assert.ok(bodies.includes('data: {&quot;choices&quot;:[]}\n\ndata: [DONE]'), 'a stream shown as stored');

      // Without bodies: how to keep them, while the workspace does not; once it does, why this one has none.
      const plain = await page('/requests/a-001');
      assert.match(text(section(plain.text, 'bodies')), /This workspace does not keep request and response bodies\. To keep them .* Settings page/);
      assert.ok(section(plain.text, 'bodies').includes('<a href="/settings#bodies">Settings</a>'));
      assert.equal(fact(plain.text, 'cache', 'Status'), 'hit');
      assert.equal(fact(plain.text, 'cache', 'Saved'), '$0 (what the reused answer cost)');
      assert.match(text(section(plain.text, 'attempts')), /None: the answer came from the cache\./);
      assert.equal(fact(plain.text, 'routing', 'Reason'), 'called as named (not routed)');
      assert.equal((await gw.request('PATCH', '/api/v1/tenant', { token: a.session, body: { store_bodies: true } })).status, 200);
      assert.match(text(section((await page('/requests/a-001')).text, 'bodies')), /This call’s bodies were not kept: body storage was off when it was made\./);
    });

    test("another workspace's request is not found, as an unknown one is", async () => {
      for (const [path, cookie] of [['/requests/b-secret', a.cookie], ['/requests/a-001', b.cookie], ['/requests/no-such-id', a.cookie]] as const) {
        const r = await page(path, cookie);
        assert.equal(r.status, 404, path);
        assert.match(r.text, /<h1>Request not found<\/h1>/);
        assert.doesNotMatch(r.text, /rate_limit_exceeded|nightly/);
      }
      const long = await page(`/requests/${'x'.repeat(300)}`);
      assert.ok(long.status === 400 || long.status === 404, String(long.status));
    });
  });

  describe(`console: the pages of calls made through the data plane (${kind})`, () => {
    let gw: LiveGateway;
    let t: LiveTenant;
    let anthropic: FakeProvider;
    let cookie: string;
    before(async () => {
      gw = await startLiveGateway(kind, { GATEWAY_CACHE_ENABLED: 'true', GATEWAY_RETRIES: '0', GATEWAY_BREAKER_FAILURES: '1000' });
      anthropic = await createFakeProvider();
      t = await gw.tenant({ providers: ['openai'] });
      const stored = await gw.api('/api/v1/tenant/provider-keys', { token: t.session, body: { provider: 'anthropic', key: 'anthropic-secret-key-second', base_url: `${anthropic.url}/v1` } });
      assert.equal(stored.status, 201);
      const settings = { routing: { fallbacks: { 'openai/gpt-4o-mini': ['anthropic/claude-haiku-4-5'] } } };
      assert.equal((await gw.api('/api/v1/tenant', { method: 'PATCH', token: t.session, body: { store_bodies: true, settings } })).status, 200);
      cookie = `gw_console=${t.session}`;
    });
    after(async () => {
      await gw.close();
      await anthropic.close();
    });

    const view = async (requestId: string) => {
      await usageRecord(gw, requestId);
      const res = await fetch(`${gw.url}/requests/${encodeURIComponent(requestId)}`, { headers: { cookie } });
      assert.equal(res.status, 200);
      return res.text();
    };
    /** The call's entry as the API gives it, once the usage writer has written it. */
    const record = async (requestId: string) => {
      await usageRecord(gw, requestId);
      return (await gw.api(`/api/v1/tenant/requests/${requestId}`, { token: t.session })).body;
    };
    const ask = (body: Partial<OpenAI.ChatCompletionCreateParamsNonStreaming>, headers: Record<string, string> = {}) =>
      t.openai.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }], ...body }, { headers }).withResponse();

    test('a call and its cache hit: the hit saved what the first call cost; tag and session link to the log', async () => {
      gw.fake.setBehaviour({ promptTokens: 1200, completionTokens: 80 }, { requests: 1 });
      const headers = { 'X-Gateway-Tag': 'nightly-eval', 'X-Gateway-Session-Id': 'agent-run-42' };
      const first = await ask({ messages: [{ role: 'user', content: 'cache me' }] }, headers);
      const hit = await ask({ messages: [{ role: 'user', content: 'cache me' }] }, headers);
      assert.equal(hit.response.headers.get('x-gateway-cache'), 'hit');
      const firstId = first.response.headers.get('x-gateway-request-id')!;
      const hitId = hit.response.headers.get('x-gateway-request-id')!;
      const paid = await record(firstId);
      assert.ok(paid.cost_usd > 0);
      const html = await view(hitId);
      assert.equal(fact(html, 'cache', 'Status'), 'hit');
      assert.equal(fact(html, 'cache', 'Saved'), `${usd(paid.cost_usd)} (what the reused answer cost)`);
      assert.equal(fact(html, 'cache', 'Tokens not paid for'), '1,280');
      assert.equal(fact(html, 'cost', 'Cost'), '$0');
      assert.equal(fact(html, 'cost', 'Saved'), usd(Number(hit.response.headers.get('x-gateway-cost-saved'))));
      assert.match(text(section(html, 'attempts')), /None: the answer came from the cache\./);
      assert.equal(fact(html, '', 'Tag'), 'nightly-eval');
      assert.equal(fact(html, '', 'Session'), 'agent-run-42');
      assert.ok(linksTo(html, 'tag', 'nightly-eval') && linksTo(html, 'session_id', 'agent-run-42'));
      const firstHtml = await view(firstId);
      assert.equal(fact(firstHtml, 'cache', 'Status'), 'miss');
      assert.equal(fact(firstHtml, 'cost', 'Cost'), usd(paid.cost_usd));
      assert.equal(fact(firstHtml, 'tokens', 'Prompt'), '1,200');
      assert.equal(fact(firstHtml, 'tokens', 'Completion'), '80');
      assert.equal(fact(firstHtml, 'latency', 'Gateway overhead'), text(`${paid.overhead_ms < 10 ? paid.overhead_ms.toFixed(1) : Math.round(paid.overhead_ms)} ms`));
      // The bodies, as the workspace keeps them: the request pretty-printed.
      assert.ok(section(firstHtml, 'bodies').includes('&quot;content&quot;: &quot;cache me&quot;'));
      // The log, filtered by the session, lists both, newest first.
      const log = await fetch(`${gw.url}/requests?session_id=agent-run-42`, { headers: { cookie } }).then((r) => r.text());
      assert.deepEqual(rowIds(log), [hitId, firstId]);
    });

    test('a compacted call: the strategies, the tokens removed and what they saved', async () => {
      const file = Array.from({ length: 60 }, (_, i) => `export function f${i}(x: number) {   \r\n  return x * ${i};\r\n}`).join('\r\n\r\n\r\n');
      const call = (id: string): OpenAI.ChatCompletionMessageParam => ({ role: 'assistant', content: null, tool_calls: [{ id, type: 'function', function: { name: 'read_file', arguments: '{"path":"a.ts"}' } }] });
      const messages: OpenAI.ChatCompletionMessageParam[] = [
        { role: 'user', content: 'Tidy a.ts' },
        call('c1'),
        { role: 'tool', tool_call_id: 'c1', content: file },
        call('c2'),
        { role: 'tool', tool_call_id: 'c2', content: file },
        // The copy is older than the latest exchange (the last assistant message and what follows), which is never changed.
        { role: 'assistant', content: 'Both reads are the same.' },
        { role: 'user', content: 'Now?' },
      ];
      const { response } = await ask({ messages }, { 'X-Gateway-Compact': 'safe', 'X-Gateway-No-Cache': 'true' });
      const id = response.headers.get('x-gateway-request-id')!;
      const html = await view(id);
      const rec = await record(id);
      assert.equal(response.headers.get('x-gateway-compaction'), 'whitespace,repeats');
      assert.match(text(section(html, 'compaction')), /Strategies applied: whitespace: line endings.* repeats: a tool output/);
      assert.equal(fact(html, 'compaction', 'Prompt tokens removed'), Number(response.headers.get('x-gateway-tokens-saved')).toLocaleString('en-US'));
      assert.ok(rec.saved_compaction_usd > 0);
      assert.equal(fact(html, 'compaction', 'Saved'), usd(rec.saved_compaction_usd));
      assert.equal(fact(html, 'cache', 'Status'), 'bypass');
      assert.equal(fact(html, 'cost', 'Saved'), usd(Number(response.headers.get('x-gateway-cost-saved'))));
    });

    test('a routed call (auto): the model asked, the one chosen, and why', async () => {
      const { response } = await ask({ model: 'auto', messages: [{ role: 'user', content: 'What is the capital of Australia?' }] }, { 'X-Gateway-No-Cache': 'true' });
      const html = await view(response.headers.get('x-gateway-request-id')!);
      assert.equal(fact(html, 'routing', 'Model asked for'), 'auto');
      assert.equal(fact(html, 'routing', 'Model that answered'), response.headers.get('x-gateway-model'));
      assert.equal(fact(html, 'routing', 'Provider'), response.headers.get('x-gateway-provider'));
      assert.equal(fact(html, 'routing', 'Reason'), response.headers.get('x-gateway-route-reason'));
      const rec = await record(response.headers.get('x-gateway-request-id')!);
      assert.ok(rec.saved_routing_usd > 0);
      assert.equal(fact(html, 'routing', 'Saved by routing'), usd(rec.saved_routing_usd));
      assert.ok(linksTo(html, 'model', 'auto'));
    });

    test('a call that failed over: each attempt with its status and error code, the fallback that answered', async () => {
      gw.fake.setBehaviour({ fault: '500' }, { requests: 1 });
      const { response } = await ask({ messages: [{ role: 'user', content: 'fail over' }] }, { 'X-Gateway-No-Cache': 'true' });
      assert.equal(response.headers.get('x-gateway-model'), 'anthropic/claude-haiku-4-5');
      const id = response.headers.get('x-gateway-request-id')!;
      const html = await view(id);
      const rec = await record(id);
      assert.equal(rec.attempts.length, 2);
      const attempts = text(section(html, 'attempts'));
      assert.match(attempts, /^Attempts and fallbacks 2 attempts over 2 models \(1 fallback\); anthropic\/claude-haiku-4-5 answered\./);
      const [failed, answered] = rec.attempts;
      assert.equal(failed.model, 'openai/gpt-4o-mini');
      // The provider's 500, as the gateway records an upstream failure (502 upstream_error).
      assert.ok(failed.status >= 500 && failed.error_code, JSON.stringify(failed));
      assert.ok(attempts.includes(`1 openai/gpt-4o-mini ${failed.status} ${failed.error_code} `), attempts);
      assert.ok(attempts.includes(`2 anthropic/claude-haiku-4-5 200 none `), attempts);
      assert.equal(fact(html, 'routing', 'Reason'), response.headers.get('x-gateway-route-reason'));
      assert.equal(fact(html, '', 'Status'), '200 OK');
      assert.equal(answered.status, 200);
      // The failed attempt is found by the error filter only if the call failed: this one answered.
      const errors = await fetch(`${gw.url}/requests?status=error`, { headers: { cookie } }).then((r) => r.text());
      assert.ok(!rowIds(errors).includes(id));
    });
  });
}

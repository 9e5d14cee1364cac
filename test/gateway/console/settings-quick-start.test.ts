import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { CONSOLE_CSP } from '../../../src/gateway/console/layout.ts';
import { DB_KINDS } from '../../helpers/env.ts';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.ts';
import { type LiveGateway, type LiveTenant, startLiveGateway } from '../../helpers/gateway-service.ts';

const csrfOf = (html: string) => /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? assert.fail(`no CSRF field in ${html.slice(0, 200)}`);
/** The text of an element's HTML as the browser would show it (the few entities escapeHtml writes). */
const htmlText = (html: string) => html.replaceAll('&quot;', '"').replaceAll('&#39;', "'").replaceAll('&lt;', '<').replaceAll('&gt;', '>').replaceAll('&amp;', '&');
const snippet = (html: string, id: string) => htmlText(new RegExp(`<pre id="snippet-${id}"[^>]*><code>([\\s\\S]*?)</code></pre>`).exec(html)?.[1] ?? assert.fail(`no ${id} snippet`));

interface Who {
  tenantId: string;
  session: string;
  cookie: string;
  csrf: string;
  apiKey: string;
  apiKeyId: string;
}

/**
 * The Settings and Quick start pages and the renaming of API keys, through
 * the real control-plane app (app.inject, SQLite and PostgreSQL): what the
 * forms store is what the API reads back; refusals sit next to their field;
 * then, on the whole gateway in front of the fake provider, the data plane
 * obeys what the forms stored, and the quick start's snippets run as shown.
 */
for (const kind of DB_KINDS) {
  describe(`console settings, quick start and key renaming (${kind})`, () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startTestGateway(kind);
    });
    after(() => gw.close());

    async function signedIn(): Promise<Who> {
      const s = await gw.signup();
      const cookie = `gw_console=${s.session}`;
      const page = await gw.request('GET', '/settings', { headers: { cookie } });
      assert.equal(page.status, 200);
      return { tenantId: s.tenantId, session: s.session, cookie, csrf: csrfOf(page.text), apiKey: s.apiKey, apiKeyId: s.apiKeyId };
    }
    const post = (who: Pick<Who, 'cookie'>, path: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
      gw.request('POST', path, { form: new URLSearchParams(fields).toString(), headers: { cookie: who.cookie, ...headers } });
    const tenant = async (who: Who) => (await gw.request('GET', '/api/v1/tenant', { token: who.session })).body;
    const page = async (who: Who, path = '/settings') => (await gw.request('GET', path, { headers: { cookie: who.cookie } })).text;
    const saved = (r: { status: number; headers: Record<string, unknown> }, slug: string) => {
      assert.equal(r.status, 303, slug);
      assert.equal(r.headers['location'], `/settings?notice=${slug}-saved#${slug}`);
    };

    test('each form stores its section through updateTenant: GET /api/v1/tenant reads back what was saved, and the page shows it again', async () => {
      const who = await signedIn();
      const changesBefore = gw.providerChanges.length;
      const workspace = await post(who, '/settings/workspace', { csrf: who.csrf, name: '  Renamed Research  ' });
      assert.equal(workspace.status, 303);
      assert.equal(workspace.headers['location'], '/settings?notice=workspace-saved#workspace');

      saved(
        await post(who, '/settings/routing', {
          csrf: who.csrf,
          enabled: 'true',
          min_tier: '2',
          tiers_1: '',
          tiers_2: 'openai/gpt-5-mini\r\nanthropic/claude-haiku-4-5',
          tiers_3: ' anthropic/claude-sonnet-4-5 ',
          baseline: 'anthropic/claude-sonnet-4-5',
          fallbacks: 'openai/gpt-4o: anthropic/claude-sonnet-4-5, openai/gpt-4.1\nopenai-compatible/llama3.1:8b: openai/gpt-4o-mini\nauto:',
          default_fallbacks: 'false',
          sticky_ttl_seconds: '1,800',
        }),
        'routing',
      );
      saved(await post(who, '/settings/compaction', { csrf: who.csrf, mode: 'budget', budget: '8000' }), 'compaction');
      saved(await post(who, '/settings/cache', { csrf: who.csrf, enabled: 'true', ttl_seconds: '120', max_entry_bytes: '', dedup: 'false' }), 'cache');
      saved(await post(who, '/settings/prompt-cache', { csrf: who.csrf, enabled: 'false' }), 'prompt-cache');
      saved(await post(who, '/settings/limits', { csrf: who.csrf, requests_per_minute: '600', tokens_per_day: '', usd_per_month: '12.5' }), 'limits');
      const bodies = await post(who, '/settings/bodies', { csrf: who.csrf, store_bodies: 'on' });
      assert.equal(bodies.headers['location'], '/settings?notice=bodies-on#bodies');

      const t = await tenant(who);
      assert.equal(t.name, 'Renamed Research');
      assert.equal(t.store_bodies, true);
      assert.deepEqual(t.settings, {
        routing: {
          enabled: true,
          min_tier: 2,
          tiers: { '2': ['openai/gpt-5-mini', 'anthropic/claude-haiku-4-5'], '3': ['anthropic/claude-sonnet-4-5'] },
          baseline: 'anthropic/claude-sonnet-4-5',
          fallbacks: { 'openai/gpt-4o': ['anthropic/claude-sonnet-4-5', 'openai/gpt-4.1'], 'openai-compatible/llama3.1:8b': ['openai/gpt-4o-mini'], auto: [] },
          default_fallbacks: false,
          sticky_ttl_seconds: 1800,
        },
        compaction: { default: '8000' },
        cache: { enabled: true, ttl_seconds: 120, dedup: false },
        prompt_cache: { enabled: false },
        limits: { requests_per_minute: 600, usd_per_month: 12.5 },
      });
      assert.equal(gw.providerChanges.length, changesBefore + 6, "the data plane's tenant cache is told of every change but the name");

      const html = await page(who, '/settings?notice=cache-saved');
      assert.match(html, /<p class="notice" role="status">Response cache saved. Calls use it from their next request on.<\/p>/);
      assert.match(html, /<input type="text" id="workspace-name" name="name" value="Renamed Research"/);
      assert.match(html, /<select id="routing-min-tier" name="min_tier"[^>]*>.*<option value="2" selected>2, standard<\/option>/);
      assert.match(html, /<textarea id="routing-tiers-2" name="tiers_2"[^>]*>openai\/gpt-5-mini\nanthropic\/claude-haiku-4-5<\/textarea>/);
      assert.match(html, /<textarea id="routing-fallbacks"[^>]*>openai\/gpt-4o: anthropic\/claude-sonnet-4-5, openai\/gpt-4.1\nopenai-compatible\/llama3.1:8b: openai\/gpt-4o-mini\nauto:<\/textarea>/);
      assert.match(html, /<select id="compaction-mode" name="mode"[^>]*>.*<option value="budget" selected>Token budget<\/option>/);
      assert.match(html, /id="compaction-budget" name="budget" value="8000"/);
      assert.match(html, /<select id="cache-enabled" name="enabled"[^>]*><option value="">Gateway default \(on\)<\/option><option value="true" selected>On<\/option>/);
      assert.match(html, /id="cache-ttl-seconds" name="ttl_seconds" value="120"/);
      assert.match(html, /<select id="cache-dedup"[^>]*>.*<option value="false" selected>Off<\/option>/);
      assert.match(html, /<select id="prompt-cache-enabled"[^>]*>.*<option value="false" selected>Off<\/option>/);
      assert.match(html, /id="limits-requests_per_minute" name="requests_per_minute" value="600"/);
      assert.match(html, /<li>Requests per minute: 600 \(0 used this minute\)<\/li>/);
      assert.match(html, /<input type="checkbox" id="store-bodies" name="store_bodies" value="on" checked/);

      await post(who, '/settings/bodies', { csrf: who.csrf });
      assert.equal((await tenant(who)).store_bodies, false, 'an unticked box turns storage off');
    });

    test("an unset field shows the gateway's effective default, read from its configuration; the bodies' retention is said plainly", async () => {
      const custom = await startTestGateway(kind, {
        GATEWAY_CACHE_TTL_SECONDS: '7200',
        GATEWAY_CACHE_ENABLED: 'false',
        GATEWAY_COMPACT_DEFAULT: 'safe',
        GATEWAY_STICKY_TTL_SECONDS: '600',
        GATEWAY_USAGE_RETENTION_DAYS: '30',
        GATEWAY_CACHE_MAX_ENTRY_BYTES: '2097152',
      });
      try {
        const s = await custom.signup();
        const html = (await custom.request('GET', '/settings', { headers: { cookie: `gw_console=${s.session}` } })).text;
        assert.match(html, /empty: the gateway’s default, 7,200 seconds \(2 hours\)\./);
        assert.match(html, /<select id="cache-enabled" name="enabled"[^>]*><option value="" selected>Gateway default \(off\)<\/option>/);
        assert.match(html, /<option value="" selected>Gateway default \(safe\)<\/option>/);
        assert.match(html, /empty: the gateway’s default, 600 seconds \(10 minutes\)\./);
        assert.match(html, /empty: the gateway’s limit, 2,097,152 bytes \(2 MiB\)\./);
        assert.match(html, /Default: on: up to 2 other models of the same tier or above, other providers first\./);
        assert.match(html, /<select id="prompt-cache-enabled"[^>]*><option value="" selected>Gateway default \(on\)<\/option>/);
        assert.match(html, /not encrypted, in the gateway’s database, and deleted with the record after 30 days \(GATEWAY_USAGE_RETENTION_DAYS on this gateway\)/);
        assert.match(html, /<input type="checkbox" id="store-bodies" name="store_bodies" value="on" aria-describedby="store-bodies-hint">/, 'off by default');
      } finally {
        await custom.close();
      }
    });

    test('refusals: 400, each error next to its field with what was typed, and nothing stored', async () => {
      const who = await signedIn();
      await post(who, '/settings/cache', { csrf: who.csrf, ttl_seconds: '60' });
      const before = await tenant(who);

      const cache = await post(who, '/settings/cache', { csrf: who.csrf, enabled: 'maybe', ttl_seconds: '0', max_entry_bytes: 'lots', dedup: '' });
      assert.equal(cache.status, 400);
      assert.match(cache.text, /id="cache-enabled-error" role="alert">Response cache: choose the gateway&#39;s default, On or Off.</);
      assert.match(cache.text, /id="cache-ttl-seconds-error" role="alert">Time to live \(seconds\) must be a whole number from 1 to 2,592,000, or empty for the gateway&#39;s default.</);
      assert.match(cache.text, /<input type="text" id="cache-ttl-seconds" name="ttl_seconds" value="0"[^>]*aria-describedby="cache-ttl-seconds-hint cache-ttl-seconds-error" aria-invalid="true" autofocus>/);
      assert.match(cache.text, /id="cache-max-entry-bytes" name="max_entry_bytes" value="lots"/);
      assert.match(cache.text, /id="cache-max-entry-bytes-error" role="alert">Largest answer stored \(bytes\) must be a whole number from 1,024 to 536,870,912/);

      const routing = await post(who, '/settings/routing', {
        csrf: who.csrf,
        tiers_1: 'openai/gpt-5-nano\ngpt-4o',
        baseline: 'nonsense/model',
        fallbacks: 'openai/gpt-4o anthropic/claude-sonnet-4-5',
        sticky_ttl_seconds: '10',
      });
      assert.equal(routing.status, 400);
      assert.match(routing.text, /id="routing-fallbacks-error" role="alert">Line 1: write the model, a colon, then its fallbacks/);
      assert.match(routing.text, /id="routing-sticky-ttl-seconds-error" role="alert">Sticky session time \(seconds\) must be a whole number from 60 to 604,800/);
      assert.match(routing.text, /<textarea id="routing-tiers-1" name="tiers_1"[^>]*>openai\/gpt-5-nano\ngpt-4o<\/textarea>/, 'what was typed, as typed');
      // The parsers passed, so the schema (the API's) speaks: each refused model named, in its field.
      const models = await post(who, '/settings/routing', { csrf: who.csrf, tiers_1: 'openai/gpt-5-nano\ngpt-4o', baseline: 'nonsense/model', fallbacks: `auto: ${Array(6).fill('openai/gpt-4o').join(', ')}` });
      assert.equal(models.status, 400);
      assert.match(models.text, /id="routing-tiers-1-error" role="alert">&quot;gpt-4o&quot; is not a model written as provider\/model with a provider of this gateway \(openai, /);
      assert.match(models.text, /id="routing-baseline-error" role="alert">&quot;nonsense\/model&quot; is not a model written as provider\/model/);
      assert.match(models.text, /id="routing-fallbacks-error" role="alert">In the chain of auto: at most 5 models.</);

      const budget = await post(who, '/settings/compaction', { csrf: who.csrf, mode: 'budget', budget: '50' });
      assert.equal(budget.status, 400);
      assert.match(budget.text, /id="compaction-budget-error" role="alert">Enter a token budget from 100 to 99999999.</);
      const stray = await post(who, '/settings/compaction', { csrf: who.csrf, mode: 'safe', budget: '900' });
      assert.match(stray.text, /id="compaction-budget-error" role="alert">Choose the mode “Token budget” to use a budget, or empty this field.</);
      assert.match(stray.text, /<option value="safe" selected>safe<\/option>/);
      const trigger = await post(who, '/settings/compaction', { csrf: who.csrf, mode: 'agent', stale_trigger_tokens: '10', read_tools: 'read_file' });
      assert.equal(trigger.status, 400);
      assert.match(trigger.text, /id="compaction-stale-trigger-tokens-error" role="alert">Clear old tool results past \(prompt tokens\) must be a whole number from 1,000 to 10,000,000/);
      assert.match(trigger.text, /<option value="agent" selected>agent<\/option>/);

      const limits = await post(who, '/settings/limits', { csrf: who.csrf, requests_per_minute: '1.5', usd_per_month: '-1' });
      assert.equal(limits.status, 400);
      assert.match(limits.text, /id="limits-requests_per_minute-error" role="alert">Requests per minute must be a whole number from 1 to 1,000,000, or empty for no limit.</);
      assert.match(limits.text, /id="limits-usd_per_month" name="usd_per_month" value="-1"/);

      const empty = await post(who, '/settings/workspace', { csrf: who.csrf, name: '   ' });
      assert.equal(empty.status, 400);
      assert.match(empty.text, /id="workspace-name-error" role="alert">The workspace name must not be empty.</);
      const long = await post(who, '/settings/workspace', { csrf: who.csrf, name: 'x'.repeat(101) });
      assert.equal(long.status, 400);
      assert.match(long.text, /id="workspace-name-error" role="alert">The workspace name must be at most 100 characters.</);
      assert.match(long.text, new RegExp(`value="${'x'.repeat(101)}"`));

      const duplicated = await gw.request('POST', '/settings/cache', { form: `csrf=${who.csrf}&ttl_seconds=1&ttl_seconds=2`, headers: { cookie: who.cookie } });
      assert.equal(duplicated.status, 400, 'a field sent twice is refused, not guessed at');
      assert.deepEqual(await tenant(who), before, 'nothing was stored');
    });

    test("reset: the section goes back to the gateway's defaults (absent from GET /api/v1/tenant), the others stay", async () => {
      const who = await signedIn();
      await post(who, '/settings/cache', { csrf: who.csrf, ttl_seconds: '60' });
      await post(who, '/settings/compaction', { csrf: who.csrf, mode: 'aggressive' });
      await post(who, '/settings/limits', { csrf: who.csrf, tokens_per_day: '1000' });
      const reset = await post(who, '/settings/cache/reset', { csrf: who.csrf });
      assert.equal(reset.status, 303);
      assert.equal(reset.headers['location'], '/settings?notice=cache-reset#cache');
      assert.deepEqual((await tenant(who)).settings, { compaction: { default: 'aggressive' }, limits: { tokens_per_day: 1000 } });
      await post(who, '/settings/limits/reset', { csrf: who.csrf });
      assert.deepEqual((await tenant(who)).settings, { compaction: { default: 'aggressive' } });
      // A form saved with every field on the default is a reset too: nothing set, nothing stored.
      saved(await post(who, '/settings/compaction', { csrf: who.csrf, mode: '', budget: '' }), 'compaction');
      assert.deepEqual((await tenant(who)).settings, {});
      const html = await page(who, '/settings?notice=cache-reset');
      assert.match(html, /role="status">Response cache reset to the gateway’s defaults.</);
      assert.match(html, /<form method="post" action="\/settings\/routing\/reset" class="stack">\s*<input type="hidden" name="csrf"/);
    });

    test('CSRF: a settings form without its token, with another session’s, or from another site is refused and changes nothing', async () => {
      const a = await signedIn();
      const b = await signedIn();
      const refusals = [
        await post(a, '/settings/cache', { ttl_seconds: '5' }),
        await post(a, '/settings/cache', { csrf: b.csrf, ttl_seconds: '5' }),
        await post(a, '/settings/cache/reset', {}),
        await post(a, '/settings/bodies', { store_bodies: 'on' }),
        await post(a, '/settings/workspace', { csrf: a.csrf, name: 'Evil' }, { 'sec-fetch-site': 'cross-site' }),
        await post(a, '/api-keys/x/rename', { csrf: a.csrf, name: 'Evil' }, { origin: 'https://evil.example' }),
      ];
      for (const r of refusals) {
        assert.equal(r.status, 403);
        assert.match(r.text, /<h1>This form was refused<\/h1>/);
      }
      const t = await tenant(a);
      assert.deepEqual([t.name, t.store_bodies, t.settings], ['Acme', false, {}]);
    });

    test("workspaces are apart: a page shows only the signed-in workspace's settings, and a form changes only its own", async () => {
      const a = await signedIn();
      const b = await signedIn();
      await post(a, '/settings/workspace', { csrf: a.csrf, name: 'Alpha Secret Labs' });
      await post(a, '/settings/routing', { csrf: a.csrf, baseline: 'openai/gpt-4.1-nano' });
      await post(a, '/settings/limits', { csrf: a.csrf, usd_per_month: '77.5' });
      const bPage = await page(b);
      for (const secret of ['Alpha Secret Labs', 'gpt-4.1-nano', '77.5']) assert.ok(!bPage.includes(secret), secret);
      await post(b, '/settings/cache', { csrf: b.csrf, ttl_seconds: '30' });
      assert.deepEqual((await tenant(a)).settings, { routing: { baseline: 'openai/gpt-4.1-nano' }, limits: { usd_per_month: 77.5 } });
      assert.deepEqual((await tenant(b)).settings, { cache: { ttl_seconds: 30 } });
      const bQuick = await page(b, '/quick-start');
      assert.ok(!bQuick.includes('Alpha Secret Labs'));
    });

    test('quick start: the base URL (GATEWAY_BASE_URL), a model of the first provider key, the key as an environment variable; no secret on the page', async () => {
      const who = await signedIn();
      const none = await gw.request('GET', '/quick-start', { headers: { cookie: who.cookie } });
      assert.equal(none.status, 200);
      assert.equal(none.headers['content-security-policy'], CONSOLE_CSP);
      assert.match(none.text, /<h1>Quick start<\/h1>/);
      assert.match(none.text, /<code class="wrap" id="base-url">http:\/\/gateway.test\/v1<\/code>/);
      assert.match(snippet(none.text, 'curl'), /"model":"auto"/, 'no provider key yet: auto');
      assert.match(none.text, /<a href="\/provider-keys">Add a provider key<\/a>/);

      await gw.request('POST', '/api/v1/tenant/provider-keys', { token: who.session, body: { provider: 'openai', key: 'sk-openai-secret-LMNO' } });
      const r = await gw.request('GET', '/quick-start', { headers: { cookie: who.cookie, host: 'evil.example' } });
      const curl = snippet(r.text, 'curl');
      assert.match(curl, /^curl -i "http:\/\/gateway.test\/v1\/chat\/completions" \\$/m);
      assert.match(curl, /-H "Authorization: Bearer \$GATEWAY_API_KEY"/);
      assert.match(curl, /"model":"openai\/gpt-5-nano"/, 'the lightest, cheapest catalog model of the provider');
      const python = snippet(r.text, 'python');
      assert.match(python, /client = OpenAI\(base_url="http:\/\/gateway.test\/v1", api_key=os.environ\["GATEWAY_API_KEY"\]\)/);
      assert.match(python, /extra_headers=\{"X-Gateway-Session-Id": "quick-start-1", "X-Gateway-Tag": "quick-start"\}/);
      const ts = snippet(r.text, 'typescript');
      assert.match(ts, /new OpenAI\(\{ baseURL: "http:\/\/gateway.test\/v1", apiKey: process.env.GATEWAY_API_KEY \}\)/);
      for (const id of ['curl', 'python', 'typescript']) {
        assert.match(r.text, new RegExp(`<button type="button" class="copy secondary" data-copy="snippet-${id}" data-copy-status="snippet-${id}-status" hidden>Copy `));
      }
      for (const header of ['X-Gateway-Session-Id', 'X-Gateway-Tag', 'X-Gateway-No-Cache: true', 'X-Gateway-Compact', 'X-Gateway-No-Route: true', 'X-Gateway-Prompt-Cache', 'X-Gateway-Cost', 'X-Gateway-Cache']) {
        assert.ok(r.text.includes(`<code>${header}`), header);
      }
      assert.match(r.text, /<caption id="request-headers-caption">/);
      for (const secret of [who.apiKey, who.session, 'sk-openai-secret', 'sk-gw-A', 'evil.example']) assert.ok(!r.text.includes(secret), secret);
      assert.doesNotMatch(r.text, /sk-gw-[A-Za-z0-9_-]{20}/, 'no API key on the page');
    });

    test('renaming a key in its card: trimmed, refused when empty (next to the field), another workspace’s key is 404; the API lists the new name', async () => {
      const a = await signedIn();
      const b = await signedIn();
      const renamed = await post(a, `/api-keys/${a.apiKeyId}/rename`, { csrf: a.csrf, name: '  laptop  ' });
      assert.equal(renamed.status, 303);
      assert.equal(renamed.headers['location'], `/api-keys?notice=renamed#key-${a.apiKeyId}`);
      const keys = (await gw.request('GET', '/api/v1/tenant/api-keys', { token: a.session })).body.api_keys;
      assert.deepEqual(keys.map((k: { name: string }) => k.name), ['laptop']);
      const list = await page(a, '/api-keys?notice=renamed');
      assert.match(list, /<h3>laptop<\/h3>/);
      assert.match(list, /role="status">Key renamed/);
      assert.match(list, new RegExp(`<form method="post" action="/api-keys/${a.apiKeyId}/rename" class="stack" novalidate>`));
      assert.match(list, new RegExp(`<label for="key-${a.apiKeyId}-name">New name for laptop</label>`));

      const blank = await post(a, `/api-keys/${a.apiKeyId}/rename`, { csrf: a.csrf, name: '   ' });
      assert.equal(blank.status, 400);
      assert.match(blank.text, new RegExp(`id="key-${a.apiKeyId}-name-error" role="alert">The key name must not be empty.<`));
      assert.match(blank.text, /<details open>\s*<summary>Rename laptop<\/summary>/);
      const long = await post(a, `/api-keys/${a.apiKeyId}/rename`, { csrf: a.csrf, name: 'n'.repeat(101) });
      assert.equal(long.status, 400);
      assert.match(long.text, /The key name must be at most 100 characters./);

      const foreign = await post(b, `/api-keys/${a.apiKeyId}/rename`, { csrf: b.csrf, name: 'stolen' });
      assert.equal(foreign.status, 404);
      assert.match(foreign.text, /role="alert">No API key with this id belongs to this tenant./);
      await post(a, `/api-keys/${a.apiKeyId}/revoke`, { csrf: a.csrf });
      assert.equal((await post(a, `/api-keys/${a.apiKeyId}/rename`, { csrf: a.csrf, name: 'again' })).status, 404, 'a revoked key is not renamed');
      const row = await gw.deps.db.selectFrom('api_keys').select('name').where('id', '=', a.apiKeyId).executeTakeFirstOrThrow();
      assert.equal(row.name, 'laptop');
    });
  });
}

/**
 * What the forms store is what the data plane does: the whole gateway on a
 * port, the fake provider behind it, the console driven over HTTP as a
 * browser would (its cookie and each form's token).
 */
describe('settings reach the data plane; the quick start snippets run as shown', () => {
  let gw: LiveGateway;
  let t: LiveTenant;
  let cookie: string;
  before(async () => {
    // The live gateway's cache is off unless a tenant turns it on (GATEWAY_CACHE_ENABLED=false there).
    gw = await startLiveGateway('sqlite', { GATEWAY_RETRIES: '0', GATEWAY_DEFAULT_FALLBACKS: '0' });
    t = await gw.tenant({ providers: ['openai'] });
    cookie = `gw_console=${t.session}`;
  });
  after(() => gw.close());

  const get = async (path: string) => (await fetch(`${gw.url}${path}`, { headers: { cookie } })).text();
  async function submit(path: string, fields: Record<string, string>): Promise<Response> {
    const csrf = csrfOf(await get('/settings'));
    return fetch(`${gw.url}${path}`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', origin: gw.url, 'sec-fetch-site': 'same-origin' },
      body: new URLSearchParams({ csrf, ...fields }).toString(),
    });
  }
  const call = (content: string) =>
    t.openai.chat.completions.create({ model: 'openai/gpt-4o-mini', temperature: 0, messages: [{ role: 'user', content }] }).withResponse();

  test('the cache turned on, then reset; compaction set to safe: the next calls say so in their X-Gateway-* headers', async () => {
    assert.equal((await call('cache me')).response.headers.get('x-gateway-cache'), 'bypass', "the gateway's default here: off");
    assert.equal((await submit('/settings/cache', { enabled: 'true', ttl_seconds: '600' })).status, 303);
    assert.equal((await call('cache me')).response.headers.get('x-gateway-cache'), 'miss');
    const hit = await call('cache me');
    assert.equal(hit.response.headers.get('x-gateway-cache'), 'hit');
    assert.equal(hit.response.headers.get('x-gateway-cost'), '0');

    // Compaction leaves the user's words alone: a tool's output is what it tidies.
    const withToolOutput = (output: string) =>
      t.openai.chat.completions
        .create({
          model: 'openai/gpt-4o-mini',
          messages: [
            { role: 'user', content: 'Read the file.' },
            { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'read_file', arguments: '{}' } }] },
            { role: 'tool', tool_call_id: 'call_1', content: output },
            { role: 'user', content: 'Thanks.' },
          ],
        })
        .withResponse();
    assert.equal((await withToolOutput('first   \n\n\n\nfile   ')).response.headers.get('x-gateway-compaction'), 'none');
    assert.equal((await submit('/settings/compaction', { mode: 'safe', budget: '' })).status, 303);
    const compacted = await withToolOutput('second   \n\n\n\nfile   ');
    // The mode agent and its knobs, saved together; what the form does not show is not lost.
    assert.equal((await submit('/settings/compaction', { mode: 'agent', budget: '', read_tools: 'Read\nview_file', stale_trigger_tokens: '50,000', stale_keep_results: '3', stale_batch_tokens: '' })).status, 303);
    assert.deepEqual((await gw.api('/api/v1/tenant', { token: t.session })).body.settings.compaction, { default: 'agent', read_tools: ['Read', 'view_file'], stale_trigger_tokens: 50000, stale_keep_results: 3 });
    assert.match(await get('/settings'), /<textarea id="compaction-read-tools" name="read_tools"[^>]*>Read\nview_file<\/textarea>/);
    assert.equal((await submit('/settings/compaction', { mode: 'safe', budget: '' })).status, 303);
    assert.equal(compacted.response.headers.get('x-gateway-compaction'), 'whitespace');
    assert.equal((gw.fake.calls.last()!.body as { messages: { content: string }[] }).messages[2]!.content, 'second\n\nfile');

    assert.equal((await submit('/settings/cache/reset', {})).status, 303);
    assert.equal((await call('cache me')).response.headers.get('x-gateway-cache'), 'bypass', 'back to the default');
    const api = await gw.api('/api/v1/tenant', { token: t.session });
    assert.deepEqual(api.body.settings, { compaction: { default: 'safe' } });
  });

  test("quick start: with GATEWAY_BASE_URL at its development default, the browser's origin; the curl and TypeScript snippets run against it", async () => {
    const html = await get('/quick-start');
    assert.ok(html.includes(`<code class="wrap" id="base-url">${gw.url}/v1</code>`), 'the origin the request came to');
    const dir = mkdtempSync(join(tmpdir(), 'quick-start-'));
    const run = promisify(execFile);
    const env = { ...process.env, GATEWAY_API_KEY: t.apiKey };
    try {
      const before = gw.fake.calls.count;
      const curl = await run('bash', ['-c', snippet(html, 'curl')], { env });
      assert.match(curl.stdout, /^HTTP\/1.1 200/);
      assert.match(curl.stdout, /x-gateway-cost: /i);
      assert.match(curl.stdout, /"choices"/);
      assert.equal(gw.fake.calls.last()!.headers['x-gateway-session-id'], undefined, 'gateway headers are not passed upstream');

      // The snippet as shown; only its import is pointed at this repository's openai package (the temp directory has none).
      const ts = snippet(html, 'typescript').replace("from 'openai'", `from '${import.meta.resolve('openai')}'`);
      writeFileSync(join(dir, 'snippet.mts'), ts);
      const node = await run(process.execPath, [join(dir, 'snippet.mts')], { env });
      assert.match(node.stdout, /^echo: Say hello in five words\./m);
      assert.match(node.stdout, /^model: openai\/gpt-5-nano cost \(USD\): [\d.]+ cache: bypass$/m, 'the headers, as the snippet prints them');
      assert.equal(gw.fake.calls.count, before + 2);
      const requests = await gw.api('/api/v1/tenant/requests?tag=quick-start', { token: t.session });
      assert.equal(requests.body.requests.length, 2, 'both calls are tagged as the snippets say');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { CONSOLE_CSP } from '../../../src/gateway/console/layout.ts';
import { DB_KINDS } from '../../helpers/env.ts';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.ts';
import { startLiveGateway, usageRecord } from '../../helpers/gateway-service.ts';

// The test gateway's clock is at 2026-03-01T12:00Z.
const FORMULA_TAG = '=HYPERLINK("http://x.example","y")';
const SCRIPT_TAG = '</script><b>x</b>';
const ODD_KEY_NAME = '-2+3 "laptop", Ada';

/** The text of an element's figure in the page's big figures: `<dt>Spend</dt><dd><span class="figure">$1.75</span>`. */
function figure(html: string, term: string): string {
  const m = new RegExp(`<dt>${term}</dt><dd><span class="figure">([^<]*(?:<[^/][^>]*>[^<]*</[^>]+>)*[^<]*)</span> <span class="muted">([^<]*)</span>`).exec(html);
  return m ? `${m[1]} | ${m[2]}` : assert.fail(`no figure "${term}" on the page`);
}

/** The rows of a table by id, each its cells' text (tags stripped, entities decoded). */
function tableRows(html: string, id: string): string[][] {
  const table = new RegExp(`<table[^>]* id="${id}">([\\s\\S]*?)</table>`).exec(html)?.[1] ?? assert.fail(`no table #${id}`);
  const body = /<tbody>([\s\S]*?)<\/tbody>/.exec(table)?.[1] ?? '';
  return [...body.matchAll(/<tr>([\s\S]*?)<\/tr>/g)].map((row) => [...row[1]!.matchAll(/<t[hd][^>]*>([\s\S]*?)<\/t[hd]>/g)].map((c) => text(c[1]!)));
}

const text = (html: string) =>
  html
    .replace(/<span class="sr-only">[^<]*<\/span>/g, '')
    .replace(/<[^>]+>/g, '')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&')
    .trim();

/** A chart's data block, parsed. */
function chartData(html: string, id: string): { kind: string; label: string; labels: string[]; series: { name: string; values: number[] }[] } {
  const json = new RegExp(`<script type="application/json" id="${id}-data">([^<]*)</script>`).exec(html)?.[1] ?? assert.fail(`no chart ${id}`);
  return JSON.parse(json);
}

/** RFC 4180 fields of a CSV text (quoted fields, doubled quotes, CRLF). */
function parseCsv(csv: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < csv.length; i++) {
    const c = csv[i]!;
    if (quoted) {
      if (c === '"' && csv[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(cell);
      cell = '';
    } else if (c === '\r' && csv[i + 1] === '\n') {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
      i++;
    } else cell += c;
  }
  assert.equal(cell, '', 'the CSV ends with CRLF');
  return rows;
}

for (const kind of DB_KINDS) {
  describe(`console Overview and Usage (${kind})`, () => {
    let gw: TestGateway;
    let a: Awaited<ReturnType<TestGateway['signup']>> & { cookie: string; otherKey: string };
    let b: Awaited<ReturnType<TestGateway['signup']>> & { cookie: string };
    before(async () => {
      gw = await startTestGateway(kind);
      const signedA = await gw.signup();
      const other = await gw.request('POST', '/api/v1/tenant/api-keys', { token: signedA.session, body: { name: ODD_KEY_NAME } });
      assert.equal(other.status, 201);
      a = { ...signedA, cookie: `gw_console=${signedA.session}`, otherKey: other.body.id };
      const signedB = await gw.signup();
      b = { ...signedB, cookie: `gw_console=${signedB.session}` };
      const rows = [
        // The last 24 hours (from 2026-02-28T13:00Z): r1, r2.
        { request_id: 'r1', created_at: Date.UTC(2026, 2, 1, 10, 15), tag: 'search', session_id: 's1', prompt_tokens: 1000, completion_tokens: 100, cost_usd: 0.5, overhead_ms: 1, upstream_ms: 100, saved_provider_cache_usd: 0.25 },
        { request_id: 'r2', created_at: Date.UTC(2026, 2, 1, 11, 20), tag: SCRIPT_TAG, session_id: 's1', cache_status: 'hit', cost_saved_usd: 0.5, saved_cache_usd: 0.5, overhead_ms: 2, upstream_ms: 0 },
        // The last 7 days: r1 to r4.
        { request_id: 'r3', created_at: Date.UTC(2026, 1, 28, 9), tag: FORMULA_TAG, cache_status: 'dedup', cost_saved_usd: 0.25, saved_cache_usd: 0.25, prompt_tokens: 1234567 },
        {
          request_id: 'r4', created_at: Date.UTC(2026, 1, 27, 8, 30), key_id: 'KEY2', model_requested: 'auto', model_used: 'anthropic/claude-haiku-4-5', cost_usd: 1.25,
          cost_saved_usd: 0.9, saved_routing_usd: 0.75, saved_compaction_usd: 0.1, saved_prompt_cache_usd: 0.05,
          // The provider's own caching: not in cost_saved_usd.
          saved_provider_cache_usd: 0.5,
        },
        // The last 30 days: r5, failed; before that: r6.
        { request_id: 'r5', created_at: Date.UTC(2026, 1, 20, 3), status: 502, error_code: 'upstream_error', model_used: null, cost_usd: 0.0042 },
        { request_id: 'r6', created_at: Date.UTC(2026, 0, 1), cost_usd: 100 },
      ];
      for (const { key_id, ...row } of rows) await gw.insertUsage({ tenant_id: a.tenantId, key_id: key_id === 'KEY2' ? a.otherKey : a.apiKeyId, ...row });
    });
    after(() => gw.close());

    const page = (who: { cookie: string }, path: string) => gw.request('GET', path, { headers: { cookie: who.cookie } });

    test('Overview: the steps before the first call while a key is missing, and the last 7 days by default', async () => {
      const r = await page(a, '/');
      assert.equal(r.status, 200);
      assert.equal(r.headers['content-security-policy'], CONSOLE_CSP);
      assert.match(r.text, /<h2 id="start-title">Before the first call<\/h2>/);
      assert.match(text(r.text), /23 Feb 2026 to 1 Mar 2026 included \(7 days, UTC\), by day\. All times are UTC\./);
      assert.equal(figure(r.text, 'Requests'), '4 | none failed');
      assert.equal(figure(r.text, 'Spend'), '$1.75 | 1,235,567 tokens in, 100 out');
      assert.equal(figure(r.text, 'Saved by the gateway'), '$1.65 | 48.5% of $3.40 without the gateway');
      assert.equal(figure(r.text, 'Cache hit rate'), '50.0% | 2 of 4 calls the cache could serve');
      assert.deepEqual(tableRows(r.text, 'savings'), [
        ['Response cache (hits)', '$0.50', '30.3%'],
        ['In-flight dedup', '$0.25', '15.2%'],
        ['Compaction', '$0.10', '6.1%'],
        ['Routing', '$0.75', '45.5%'],
        ['Prompt-cache hints the gateway added', '$0.05', '3.0%'],
        ['Total', '$1.65', '100.0%'],
      ]);
      // The provider's own caching (r1 and r4: $0.75) beside the gateway's saving, not summed into it: the total and the
      // cost without the gateway stay as they were.
      assert.equal(figure(r.text, 'The provider’s own caching'), '$0.75 | saved by the provider’s prompt cache, not in the gateway’s saving');
      assert.deepEqual(tableRows(r.text, 'provider-cache'), [['The provider’s own caching', '$0.75']]);
      assert.ok(r.text.indexOf('id="provider-cache"') > r.text.indexOf('id="savings"'), 'after the savings by cause, in a table of its own');
      const chart = chartData(r.text, 'cost-chart');
      assert.equal(chart.kind, 'line');
      assert.deepEqual(chart.labels, ['Mon 23 Feb', 'Tue 24 Feb', 'Wed 25 Feb', 'Thu 26 Feb', 'Fri 27 Feb', 'Sat 28 Feb', 'Sun 1 Mar']);
      assert.deepEqual(chart.series.map((s) => s.name), ['Spend', 'Without the gateway']);
      assert.deepEqual(chart.series[0]!.values, [0, 0, 0, 0, 1.25, 0, 0.5]);
      assert.deepEqual(chart.series[1]!.values, [0, 0, 0, 0, 2.15, 0.25, 1]);
      // The chart's figures as a table too (screen readers, no JavaScript), open until the script draws the chart.
      assert.match(r.text, /<details class="chart-figures" open>/);
      assert.deepEqual(tableRows(r.text, 'cost-figures').at(-3), ['Fri 27 Feb', '$1.25', '$2.15', '$0.90']);
      assert.match(r.text, /<caption id="latency-caption">Latency percentiles over 4 calls<\/caption>/);
      assert.equal(tableRows(r.text, 'latency').length, 3);
      // Chart.js and the charts' script, from the allow-list, deferred; nothing inline.
      assert.match(r.text, /<script src="\/assets\/[\w-]{12}\/chart\.umd\.min\.js" defer><\/script><script src="\/assets\/[\w-]{12}\/console-charts\.js" defer><\/script>/);
      for (const script of r.text.match(/<script\b[^>]*>/g) ?? []) assert.match(script, /\bsrc="\/assets\/|type="application\/json"/);
      assert.doesNotMatch(r.text, /<style\b|\sstyle=|\son[a-z]+=/i);
      const js = await gw.request('GET', /src="(\/assets\/[^"]+\/console-charts\.js)"/.exec(r.text)![1]!);
      assert.equal(js.status, 200);
      assert.match(String(js.headers['content-type']), /^text\/javascript/);
    });

    test('Overview: 24 hours by the hour, 30 days, custom dates; once both keys exist the steps go', async () => {
      const day = await page(a, '/?period=24h');
      assert.match(text(day.text), /From 28 Feb 2026, 13:00 to 1 Mar 2026, 13:00 UTC, by hour\./);
      assert.equal(figure(day.text, 'Requests'), '2 | none failed');
      const hourly = chartData(day.text, 'cost-chart');
      assert.equal(hourly.labels.length, 24);
      assert.equal(hourly.labels[0], '28 Feb, 13:00');
      assert.equal(hourly.labels.at(-1), '1 Mar, 12:00');
      assert.equal(tableRows(day.text, 'cost-figures').length, 24);
      const month = await page(a, '/?period=30d');
      assert.equal(figure(month.text, 'Requests'), '5 | 1 failed');
      assert.equal(figure(month.text, 'Spend'), '$1.75 | 1,235,567 tokens in, 100 out', 'totals to the cent');
      assert.equal(chartData(month.text, 'cost-chart').labels.length, 30);
      const custom = await page(a, '/?period=custom&from=2026-02-27&to=2026-02-28');
      assert.equal(custom.status, 200);
      assert.equal(figure(custom.text, 'Requests'), '2 | none failed');
      assert.equal(chartData(custom.text, 'cost-chart').labels.length, 48, 'two days: by hour');
      assert.match(custom.text, /<select id="period" name="period"[^>]*><option value="24h">Last 24 hours<\/option><option value="7d">Last 7 days<\/option><option value="30d">Last 30 days<\/option><option value="custom" selected>/);
      await gw.request('POST', '/api/v1/tenant/provider-keys', { token: a.session, body: { provider: 'openai', key: 'sk-openai-0123456789' } });
      assert.doesNotMatch((await page(a, '/')).text, /Before the first call/);
    });

    test('custom periods are checked: 400 with the error next to its field', async () => {
      const cases: [string, string, RegExp][] = [
        ['period=custom', 'from', /Enter the first day of the period/],
        ['period=custom&from=2026-02-30&to=2026-03-01', 'from', /From must be a date such as 2026-03-01/],
        ['period=custom&from=2026-03-05&to=2026-03-01', 'to', /To must be the same day as From or later/],
        ['period=custom&from=2025-01-01&to=2026-01-02', 'to', /at most 366 days; this one covers 367/],
        ['period=week', 'period', /Choose a period from the list/],
      ];
      for (const [query, field, message] of cases) {
        for (const path of ['/', '/usage']) {
          const r = await page(a, `${path}?${query}`);
          assert.equal(r.status, 400, `${path}?${query}`);
          const error = new RegExp(`<p class="field-error" id="${field}-error" role="alert">([^<]*)</p>`).exec(r.text);
          assert.match(error?.[1] ?? '', message, `${path}?${query}`);
          assert.match(r.text, new RegExp(`id="${field}" name="${field}"[^>]*aria-describedby="[^"]*${field}-error"[^>]*aria-invalid="true"`), `${path}?${query}`);
          assert.doesNotMatch(r.text, /data-chart=|chart\.umd\.min\.js/, 'no figures, no chart');
        }
      }
      // 366 days, both included, is the longest.
      assert.equal((await page(a, '/?period=custom&from=2025-03-01&to=2026-03-01')).status, 200);
      const csv = await page(a, '/usage.csv?period=custom&from=2026-03-05&to=2026-03-01');
      assert.equal(csv.status, 400);
      assert.match(csv.text, /To must be the same day as From or later/);
    });

    test('Usage: grouped by model, key, tag, session, day and hour; the figures are the API’s', async () => {
      const byModel = await page(a, '/usage?period=30d');
      assert.equal(byModel.status, 200);
      assert.match(byModel.text, /<h2 id="groups-title">By model<\/h2>/);
      assert.deepEqual(
        tableRows(byModel.text, 'groups').map((r) => r.slice(0, 6)),
        [
          ['anthropic/claude-haiku-4-5', '1', '0', '0', '0', '$1.25'],
          ['openai/gpt-4o-mini', '3', '0', '1,235,567', '100', '$0.50'],
          ['gpt-4o-mini', '1', '1', '0', '0', '$0.0042'],
        ],
      );
      const api = await gw.request('GET', `/api/v1/tenant/usage?from=${Date.UTC(2026, 1, 2)}&to=${Date.UTC(2026, 2, 2)}&group_by=model`, { token: a.session });
      assert.equal(figure(byModel.text, 'Spend').split(' | ')[0], '$1.75');
      assert.ok(Math.abs(api.body.totals.cost_usd - 1.7542) < 1e-12);
      assert.deepEqual(api.body.groups.map((g: { key: string }) => g.key), ['anthropic/claude-haiku-4-5', 'openai/gpt-4o-mini', 'gpt-4o-mini']);
      const bars = chartData(byModel.text, 'group-chart');
      assert.equal(bars.kind, 'bar');
      assert.deepEqual(bars.labels, ['anthropic/claude-haiku-4-5', 'openai/gpt-4o-mini', 'gpt-4o-mini']);

      const byKey = tableRows((await page(a, '/usage?group_by=key')).text, 'groups');
      assert.deepEqual(
        byKey.map((r) => [r[0], r[1]]),
        [
          [`${ODD_KEY_NAME} (${a.otherKey})`, '1'],
          [`default (${a.apiKeyId})`, '3'],
        ],
      );
      const byTag = await page(a, '/usage?group_by=tag');
      assert.deepEqual(new Set(tableRows(byTag.text, 'groups').map((r) => r[0])), new Set(['search', SCRIPT_TAG, FORMULA_TAG, '(no tag)']));
      // A tag such as "</script>" stays text: escaped in the page, and unable to end the chart's data block.
      assert.ok(!byTag.text.includes(SCRIPT_TAG), 'the tag never appears unescaped');
      assert.ok(chartData(byTag.text, 'group-chart').labels.includes(SCRIPT_TAG));
      // A group links to its calls in the request log, with the period.
      assert.match(byTag.text, /<a href="\/requests\?from=2026-02-23T00%3A00%3A00\.000Z&amp;to=2026-03-02T00%3A00%3A00\.000Z&amp;tag=search">search<\/a>/);
      assert.deepEqual(
        tableRows((await page(a, '/usage?group_by=session')).text, 'groups').map((r) => [r[0], r[1]]),
        [
          ['(no session)', '2'],
          ['s1', '2'],
        ],
      );
      assert.deepEqual(
        tableRows((await page(a, '/usage?group_by=day')).text, 'groups').map((r) => [r[0], r[1], r[5]]),
        [
          ['Fri 27 Feb', '1', '$1.25'],
          ['Sat 28 Feb', '1', '$0.00'],
          ['Sun 1 Mar', '2', '$0.50'],
        ],
      );
      assert.deepEqual(
        tableRows((await page(a, '/usage?period=24h&group_by=hour')).text, 'groups').map((r) => [r[0], r[1]]),
        [
          ['1 Mar, 10:00', '1'],
          ['1 Mar, 11:00', '1'],
        ],
      );
      const tooLong = await page(a, '/usage?period=custom&from=2026-01-01&to=2026-02-01&group_by=hour');
      assert.equal(tooLong.status, 400);
      assert.match(tooLong.text, /id="group_by-error" role="alert">Hours can be listed over at most 31 days/);
    });

    test('Usage: filters by tag, session, model and key; an empty field is no filter', async () => {
      const totals = async (query: string) => figure((await page(a, `/usage?period=30d&${query}`)).text, 'Requests').split(' | ')[0];
      assert.equal(await totals('tag=&session_id=&model=&key_id='), '5');
      assert.equal(await totals('tag=search'), '1');
      assert.equal(await totals(`tag=${encodeURIComponent(FORMULA_TAG)}`), '1');
      assert.equal(await totals('session_id=s1'), '2');
      assert.equal(await totals('model=auto'), '1');
      assert.equal(await totals('model=openai%2Fgpt-4o-mini'), '3');
      assert.equal(await totals(`key_id=${a.otherKey}`), '1');
      assert.equal(await totals(`key_id=${a.apiKeyId}&session_id=s1&tag=search`), '1');
      const none = await page(a, '/usage?period=30d&tag=no-such-tag');
      assert.match(none.text, /No calls in this period with these filters\./);
      assert.doesNotMatch(none.text, /data-chart=/);
      // The key filter lists the workspace's live keys.
      assert.match(none.text, new RegExp(`<option value="${a.otherKey}">-2\\+3 &quot;laptop&quot;, Ada \\(sk-gw-`));
      // Filtered, the report has no latency (the buckets keep no labels).
      assert.doesNotMatch((await page(a, '/usage?tag=search')).text, /Latency p50/);
      assert.match((await page(a, '/usage')).text, /<dt>Latency p50 \/ p95<\/dt>/);
    });

    test('CSV: the same groups and filters, RFC 4180 quoting, formulas neutralised, as an attachment', async () => {
      const r = await page(a, '/usage.csv?period=30d&group_by=tag');
      assert.equal(r.status, 200);
      assert.equal(r.headers['content-type'], 'text/csv; charset=utf-8');
      assert.equal(r.headers['content-disposition'], 'attachment; filename="usage-by-tag-2026-01-31-to-2026-03-01.csv"');
      assert.equal(r.headers['cache-control'], 'no-store');
      assert.equal(r.headers['x-content-type-options'], 'nosniff');
      const rows = parseCsv(r.text);
      assert.deepEqual(rows[0], [
        'tag', 'requests', 'errors', 'prompt_tokens', 'completion_tokens', 'tokens_saved', 'cost_usd', 'cost_without_gateway_usd', 'cost_saved_usd',
        'saved_cache_usd', 'saved_dedup_usd', 'saved_compaction_usd', 'saved_routing_usd', 'saved_prompt_cache_usd', 'saved_provider_cache_usd',
        'cache_hits', 'dedup_hits', 'cache_misses', 'cache_hit_rate',
      ]);
      const byTag = new Map(rows.slice(1).map((row) => [row[0], row]));
      assert.deepEqual([...byTag.keys()].sort(), ['', "'=HYPERLINK(\"http://x.example\",\"y\")", 'search', SCRIPT_TAG].sort());
      assert.ok(r.text.includes(`"'=HYPERLINK(""http://x.example"",""y"")"`), 'quoted, its quotes doubled, an apostrophe first');
      assert.deepEqual(byTag.get('')!.slice(1, 3), ['2', '1'], 'no tag: r4 and r5, one failed');
      assert.equal(byTag.get('')![6], '1.2542');
      assert.equal(byTag.get(`'${FORMULA_TAG}`)![10], '0.25', 'the dedup saving');
      assert.equal(byTag.get(`'${FORMULA_TAG}`)![18], '1', 'hit rate: one dedup of one');
      assert.equal(byTag.get(`'${FORMULA_TAG}`)![3], '1234567');
      assert.equal(byTag.get(`'${FORMULA_TAG}`)![18], '1');
      assert.equal(byTag.get('')![18], '0', 'no tag: two misses');
      // The provider's own caching, apart from cost_saved_usd (no tag: r4's $0.90 saved by the gateway, $0.50 by the provider).
      assert.deepEqual([byTag.get('')![8], byTag.get('')![14]], ['0.9', '0.5']);
      assert.equal(byTag.get('search')![14], '0.25');
      // The key's name, which starts like a formula and holds a comma and quotes.
      const byKey = parseCsv((await page(a, '/usage.csv?period=30d&group_by=key')).text);
      assert.deepEqual(byKey[0]!.slice(0, 3), ['key_id', 'key_name', 'requests']);
      assert.deepEqual(byKey.find((row) => row[0] === a.otherKey)!.slice(0, 3), [a.otherKey, `'${ODD_KEY_NAME}`, '1']);
      // Filters apply as on the page.
      const filtered = parseCsv((await page(a, `/usage.csv?period=30d&group_by=day&key_id=${a.apiKeyId}`)).text);
      assert.deepEqual(filtered.map((row) => [row[0], row[1]]), [['day', 'requests'], ['2026-02-20', '1'], ['2026-02-28', '1'], ['2026-03-01', '2']]);
    });

    test("tenant isolation: B's Overview, Usage and CSV show nothing of A's", async () => {
      const overview = await page(b, '/?period=30d');
      assert.equal(figure(overview.text, 'Requests'), '0 | none failed');
      assert.match(overview.text, /No calls in this period\./);
      for (const path of ['/usage?period=30d&group_by=tag', `/usage?period=30d&key_id=${a.apiKeyId}`, '/usage?period=30d&tag=search']) {
        const r = await page(b, path);
        assert.equal(r.status, 200, path);
        assert.equal(figure(r.text, 'Requests').split(' | ')[0], '0', path);
        assert.doesNotMatch(r.text, /id="groups"|data-chart=/, path);
      }
      const csv = await page(b, '/usage.csv?period=30d&group_by=tag');
      assert.deepEqual(parseCsv(csv.text).length, 1, 'the header line only');
      assert.equal((await page({ cookie: '' }, '/usage')).status, 303);
      assert.equal((await page({ cookie: '' }, '/usage.csv')).status, 303);
    });
  });

  describe(`console Overview and Usage after real calls (${kind})`, () => {
    test('calls through the data plane to the fake provider show on the Overview and the Usage page', async () => {
      const gw = await startLiveGateway(kind);
      try {
        const t = await gw.tenant();
        const tagged = await t.openai.chat.completions
          .create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }] }, { headers: { 'x-gateway-tag': 'live-tag', 'x-gateway-session-id': 'live-session' } })
          .withResponse();
        await t.openai.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'again' }] });
        await usageRecord(gw, tagged.response.headers.get('x-request-id')!);
        await gw.service.dataPlane.usage.flush();
        const get = async (path: string) => {
          const res = await fetch(`${gw.url}${path}`, { headers: { cookie: `gw_console=${t.session}` }, redirect: 'manual' });
          return { status: res.status, text: await res.text() };
        };
        const overview = await get('/?period=24h');
        assert.equal(overview.status, 200);
        assert.match(figure(overview.text, 'Requests'), /^2 \| none failed$/);
        const api = await gw.api('/api/v1/tenant/usage?group_by=tag', { token: t.session });
        assert.equal(api.body.totals.requests, 2);
        assert.ok(api.body.totals.cost_usd > 0);
        const usage = await get('/usage?group_by=tag');
        assert.deepEqual(new Set(tableRows(usage.text, 'groups').map((r) => r[0])), new Set(['live-tag', '(no tag)']));
        assert.equal(figure(usage.text, 'Requests').split(' | ')[0], '2');
      } finally {
        await gw.close();
      }
    });
  });
}


import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { RequestDetail } from '../../../src/gateway/usage/request-log.ts';
import { chromiumSkip, launchChromium } from '../../helpers/chromium.ts';
import { ConsoleBrowser, h1, MailInbox, path, settle, submitting } from '../../helpers/console-browser.ts';
import { type LiveGateway, startLiveGateway, usageRecord } from '../../helpers/gateway-service.ts';

/** Git-ignored: every page at desktop and phone width, for a person to look at (the best are copied to docs/images/). */
const SHOTS = join(import.meta.dirname, '..', '..', '.screenshots', 'console');

// Figures written as the pages write them, recomputed here (not imported), so a changed figure or format is seen.

/** The Overview's and Usage's dollars (usage-view.ts formatUsd): cents from $1, two significant digits below. */
function dollars(n: number): string {
  const abs = Math.abs(n);
  if (abs === 0 || abs >= 0.995) return new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD', minimumFractionDigits: 2, maximumFractionDigits: 2 }).format(n);
  const digits = Math.min(6, Math.max(2, 1 - Math.floor(Math.log10(abs))));
  return new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD', minimumFractionDigits: 2, maximumFractionDigits: digits }).format(n);
}
/** The Requests pages' dollars (request-format.ts usd): three significant digits below a cent. */
function usd(n: number): string {
  if (n === 0) return '$0';
  if (n >= 1) return `$${n.toFixed(2)}`;
  if (n >= 0.01) return `$${n.toFixed(4)}`;
  return `$${n.toFixed(Math.min(12, 2 - Math.floor(Math.log10(n))))}`;
}
const count = (n: number) => n.toLocaleString('en-US');
const percent = (part: number, whole: number) => `${((part / whole) * 100).toFixed(1)}%`;
const sum = <T>(items: readonly T[], pick: (item: T) => number) => items.reduce((s, item) => s + pick(item), 0);

/** One call made through the SDK: what it was for, its response headers, and (later) its record as the API gives it. */
interface Made {
  what: 'miss' | 'hit' | 'compacted' | 'routed' | 'failed';
  id: string;
  headers: Headers;
  record: RequestDetail;
}

/**
 * The console's figures as a person reads them, in real Chromium: workspace
 * A signs in by the emailed link, turns the response cache on in Settings,
 * stores a provider key pointing at the fake provider and creates an API
 * key in the page; the `openai` SDK then makes a call, the same call again
 * (a cache hit), a compacted call, a routed call (`auto`) and a call the
 * provider refuses. Each page (Overview, Usage and its CSV, the request log
 * and its filters, each call's page) must show those calls' figures,
 * computed here from the calls' own records (the request log API, not the
 * rollups the pages read) and cross-checked with their response headers.
 * Workspace B, in another browser context, sees none of it. Every page is
 * audited (CSP, no inline script or style, labels, heading order, no
 * console error, nothing wider than a 375 px phone) and shot at both widths.
 */
describe("the console's figures in Chromium", { skip: chromiumSkip }, () => {
  let browser: Browser;
  let gw: LiveGateway;
  const inbox = new MailInbox();
  /** This suite's pages with their errors and documents, audit(), shoot(), signIn() (test/helpers/console-browser.ts). */
  let ui: ConsoleBrowser;
  const a = { email: `figures-a-${process.pid}@example.com`, name: 'Acme Figures', context: undefined as unknown as BrowserContext, page: undefined as unknown as Page };
  const b = { email: `figures-b-${process.pid}@example.com`, name: 'Beta Figures', context: undefined as unknown as BrowserContext, page: undefined as unknown as Page };
  let apiKey = '';
  const made: Made[] = [];
  const call = (what: Made['what']) => made.find((m) => m.what === what)!;

  before(async () => {
    browser = await launchChromium();
    // The cache is off in the helper's gateway (its suites repeat calls): workspace A turns it on in Settings.
    gw = await startLiveGateway('sqlite', {}, { transport: inbox.transport });
    // Reduced motion: the charts draw without animation, so a screenshot shows them whole (and shoot() lets them settle).
    ui = new ConsoleBrowser({ browser, baseUrl: gw.url, inbox, shots: SHOTS, context: { reducedMotion: 'reduce', acceptDownloads: true }, settleCharts: true });
    for (const who of [a, b]) {
      assert.equal((await gw.api('/api/v1/signup', { body: { name: who.name, email: who.email } })).status, 201);
      await inbox.confirmSignup(who.email, gw.url);
    }
  });
  after(async () => {
    await browser?.close();
    await gw?.close();
  });

  const go = async (page: Page, to: string) => {
    const res = await page.goto(`${gw.url}${to}`);
    return res?.status();
  };
  const sessionOf = async (who: typeof a) => (await who.context.cookies(gw.url)).find((c) => c.name === 'gw_console')!.value;

  // Reading figures off a page.

  /** The Overview's and Usage's big figures: term → [figure, note]. */
  async function stats(page: Page): Promise<Record<string, [string, string]>> {
    return page.evaluate(() => {
      const out: Record<string, [string, string]> = {};
      for (const item of document.querySelectorAll('dl.stats > div')) {
        const term = item.querySelector('dt')!.textContent!.trim();
        out[term] = [item.querySelector('.figure')!.textContent!.trim(), item.querySelector('.muted')!.textContent!.trim()];
      }
      return out;
    });
  }

  /** A table's body rows, each cell's text (the row header first); textContent, as a chart's table is in a closed <details>. */
  const tableRows = (page: Page, selector: string) =>
    page.locator(`${selector} tbody tr`).evaluateAll((rows) => rows.map((r) => [...r.querySelectorAll('th, td')].map((c) => c.textContent!.replace(/\s+/g, ' ').trim())));

  /** The facts (`<dt>` → `<dd>`) of a call's page: the summary (slug '') or a stage's section. */
  const facts = (page: Page, slug: string) =>
    page.evaluate((s) => {
      const list = s === '' ? document.querySelector('dl.facts.summary') : document.querySelector(`section[aria-labelledby="${s}-title"] dl.facts`);
      const out: Record<string, string> = {};
      for (const dt of list?.querySelectorAll('dt') ?? []) out[dt.textContent!.trim()] = (dt.nextElementSibling as HTMLElement).innerText.replace(/\s+/g, ' ').trim();
      return out;
    }, slug);
  const sectionText = (page: Page, slug: string) => page.locator(`section[aria-labelledby="${slug}-title"]`).innerText();

  /** The request log's rows, newest first: each call's id (from its link) and its cells. */
  const logRows = (page: Page) =>
    page.locator('table.log-table tbody tr').evaluateAll((rows) =>
      rows.map((r) => ({
        id: decodeURIComponent(r.querySelector('a')!.getAttribute('href')!.slice('/requests/'.length)),
        cells: [...r.querySelectorAll('td')].map((c) => (c as HTMLElement).innerText.replace(/\s+/g, ' ').trim()),
      })),
    );

  /** A chart's data block (usage-view.ts chartBlock), as console-charts.js reads it. */
  const chartData = async (page: Page, id: string) =>
    JSON.parse(await page.locator(`script#${id}`).textContent() ?? '') as { labels: string[]; series: { name: string; values: number[] }[] };
  const near = (actual: number, expected: number, what: string) => assert.ok(Math.abs(actual - expected) < 1e-11, `${what}: ${actual}, expected ${expected}`);

  /** Waits for every chart of the page to be drawn, and checks each canvas has paint on it. */
  async function chartsDrawn(page: Page, expected: number): Promise<void> {
    await page.waitForFunction((n) => document.querySelectorAll('.chart-box canvas').length === n && !document.querySelector('details.chart-figures[open]'), expected);
    await settle(page);
    const painted = await page.locator('.chart-box canvas').evaluateAll((canvases) =>
      canvases.map((c) => {
        const canvas = c as HTMLCanvasElement;
        const pixels = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height).data;
        return canvas.width > 0 && canvas.height > 0 && pixels.some((v, i) => i % 4 === 3 && v !== 0);
      }),
    );
    assert.deepEqual(painted, Array(expected).fill(true), `charts drawn on ${path(page)}`);
  }

  test('workspace A signs in by the emailed link, turns the cache and request bodies on in Settings, stores a provider key for the fake provider and creates an API key in the page', async () => {
    ({ context: a.context, page: a.page } = await ui.newPage());
    const page = a.page;
    await ui.signIn(page, a.email);

    await submitting(page, () => page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Settings' }).click());
    assert.equal(await h1(page), 'Settings');
    assert.equal(await page.locator('#cache-enabled').inputValue(), '', 'the gateway default');
    assert.match(await page.locator('#cache-enabled option[value=""]').innerText(), /Gateway default \(off\)/);
    await page.locator('#cache-enabled').selectOption({ label: 'On' });
    await submitting(page, () => page.getByRole('button', { name: 'Save response cache' }).click());
    assert.equal(await page.getByRole('status').first().innerText(), 'Response cache saved. Calls use it from their next request on.');
    assert.equal(await page.locator('#cache-enabled').inputValue(), 'true');
    await page.getByLabel('Keep prompt and completion bodies in the request log').check();
    await submitting(page, () => page.locator('#bodies').getByRole('button', { name: 'Save', exact: true }).click());
    assert.equal(await page.getByRole('status').first().innerText(), 'Request bodies are kept from the next call on.');
    const tenant = await gw.api('/api/v1/tenant', { token: await sessionOf(a) });
    assert.equal(tenant.body.settings.cache.enabled, true);
    assert.equal(tenant.body.store_bodies, true);
    await page.goto(`${gw.url}/settings#cache`);
    await ui.shoot(page, 'figures-settings');

    await go(page, '/provider-keys');
    await page.getByLabel('Provider').selectOption({ label: 'OpenAI' });
    await page.locator('#add-key').fill('sk-fake-figures-4321');
    await page.locator('#add-base-url').fill(`${gw.fake.url}/v1`);
    await submitting(page, () => page.getByRole('button', { name: 'Save key' }).click());
    assert.match(await page.getByRole('status').first().innerText(), /Key saved/);

    await go(page, '/api-keys');
    await page.getByLabel('Name', { exact: true }).fill('figures-bot');
    await submitting(page, () => page.getByRole('button', { name: 'Create key' }).click());
    apiKey = await page.locator('#new-key').inputValue();
    assert.match(apiKey, /^sk-gw-[A-Za-z0-9_-]{43}$/);

    await go(page, '/quick-start');
    assert.equal(await h1(page), 'Quick start');
    assert.equal(await page.locator('#base-url').innerText(), `${gw.url}/v1`);
    assert.ok(!(await page.content()).includes(apiKey), 'the key is never on the quick start');
    await ui.shoot(page, 'figures-quick-start');
  });

  test('through the openai SDK: a call, the same call from the cache, a compacted call, a routed call and a call the provider refuses, each saying what happened in its headers', async () => {
    const sdk = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey, maxRetries: 0 });
    const ask = async (what: Made['what'], body: Partial<OpenAI.ChatCompletionCreateParamsNonStreaming>, headers: Record<string, string>) => {
      const { response } = await sdk.chat.completions
        .create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }], ...body }, { headers })
        .withResponse();
      made.push({ what, id: response.headers.get('x-gateway-request-id')!, headers: response.headers, record: undefined as unknown as RequestDetail });
      return response.headers;
    };
    const nightly = { 'X-Gateway-Tag': 'nightly-eval', 'X-Gateway-Session-Id': 'eval-run-7' };
    gw.fake.setBehaviour({ promptTokens: 1500, completionTokens: 120 }, { requests: 1 });
    const question = [{ role: 'user' as const, content: 'Summarise the release notes of version 4.2.' }];
    const miss = await ask('miss', { messages: question }, nightly);
    assert.equal(miss.get('x-gateway-cache'), 'miss');
    const hit = await ask('hit', { messages: question }, nightly);
    assert.equal(hit.get('x-gateway-cache'), 'hit');
    assert.equal(hit.get('x-gateway-cost'), '0');
    assert.equal(hit.get('x-gateway-cost-saved'), miss.get('x-gateway-cost'), 'the hit saved what the first call cost');

    // An agent's turn with a long build log as a tool output, older than the latest exchange (which is never changed):
    // aggressive compaction cuts its middle.
    const log = Array.from({ length: 400 }, (_, i) => `[build] step ${i}: compiled module-${i}.ts in ${(i * 7) % 97} ms, 0 warnings`).join('\n');
    const compacted = await ask(
      'compacted',
      {
        messages: [
          { role: 'user', content: 'Why did the build get slower?' },
          { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'read_log', arguments: '{"file":"build.log"}' } }] },
          { role: 'tool', tool_call_id: 'call_1', content: log },
          { role: 'assistant', content: 'Step 212 is the slow one.' },
          { role: 'user', content: 'Well?' },
        ],
      },
      { 'X-Gateway-Compact': 'aggressive', 'X-Gateway-Tag': 'agent', 'X-Gateway-Session-Id': 'agent-run-1' },
    );
    assert.match(compacted.get('x-gateway-compaction')!, /tool-output/);
    assert.ok(Number(compacted.get('x-gateway-tokens-saved')) > 1000, `tokens saved: ${compacted.get('x-gateway-tokens-saved')}`);

    // A longer answer reported for the routed call, so what routing saved is a figure of its own beside the others.
    gw.fake.setBehaviour({ promptTokens: 3000, completionTokens: 200 }, { requests: 1 });
    const routed = await ask('routed', { model: 'auto', messages: [{ role: 'user', content: 'What is the capital of Australia?' }] }, {});
    assert.match(routed.get('x-gateway-model')!, /^openai\//);
    assert.ok(routed.get('x-gateway-route-reason'), 'a route reason');

    gw.fake.setBehaviour({ fault: '401' }, { requests: 1 });
    const failed = await sdk.chat.completions
      .create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'This one fails.' }] }, { headers: { 'X-Gateway-Tag': 'agent' } })
      .then(
        () => assert.fail('the provider refused the key: the call must fail'),
        (err: unknown) => err,
      );
    assert.ok(failed instanceof OpenAI.AuthenticationError, String(failed));
    assert.equal(failed.status, 401);
    assert.equal(failed.code, 'upstream_authentication_failed');
    made.push({ what: 'failed', id: failed.headers.get('x-gateway-request-id')!, headers: failed.headers, record: undefined as unknown as RequestDetail });

    // Each call's record, once written, as the API gives it; its cost and saving are what its headers said.
    const token = await sessionOf(a);
    for (const m of made) {
      assert.ok(m.id, `${m.what}: a request id`);
      await usageRecord(gw, m.id);
      const r = await gw.api(`/api/v1/tenant/requests/${m.id}`, { token });
      assert.equal(r.status, 200);
      m.record = r.body;
      if (m.what !== 'failed') {
        assert.ok(Math.abs(m.record.cost_usd - Number(m.headers.get('x-gateway-cost'))) < 1e-9, `${m.what}: cost ${m.record.cost_usd} vs ${m.headers.get('x-gateway-cost')}`);
        assert.ok(Math.abs(m.record.cost_saved_usd - Number(m.headers.get('x-gateway-cost-saved'))) < 1e-9, `${m.what}: saved`);
      }
    }
    assert.deepEqual(
      made.map((m) => [m.what, m.record.status, m.record.cache_status]),
      [
        ['miss', 200, 'miss'],
        ['hit', 200, 'hit'],
        ['compacted', 200, 'miss'],
        ['routed', 200, 'miss'],
        ['failed', 401, 'miss'],
      ],
    );
    assert.ok(call('miss').record.cost_usd > 0 && call('compacted').record.saved_compaction_usd > 0 && call('routed').record.saved_routing_usd > 0);
  });

  test('Overview, last 24 hours: requests and failures, spend and tokens, saved and its share, the hit rate, the savings by cause, the chart', async () => {
    const page = a.page;
    await go(page, '/');
    await page.getByLabel('Period', { exact: true }).selectOption({ label: 'Last 24 hours' });
    await submitting(page, () => page.getByRole('button', { name: 'Show' }).click());
    assert.equal(new URL(page.url()).searchParams.get('period'), '24h');
    const rows = made.map((m) => m.record);
    const spend = sum(rows, (r) => r.cost_usd);
    const saved = sum(rows, (r) => r.cost_saved_usd);
    const hits = rows.filter((r) => r.cache_status === 'hit' || r.cache_status === 'dedup').length;
    const misses = rows.filter((r) => r.cache_status === 'miss').length;
    const failed = rows.filter((r) => r.status >= 400).length;
    assert.deepEqual([rows.length, failed, hits, misses], [5, 1, 1, 4]);
    const shown = await stats(page);
    assert.deepEqual(shown['Requests'], ['5', '1 failed']);
    assert.deepEqual(shown['Spend'], [dollars(spend), `${count(sum(rows, (r) => r.prompt_tokens))} tokens in, ${count(sum(rows, (r) => r.completion_tokens))} out`]);
    assert.deepEqual(shown['Saved by the gateway'], [dollars(saved), `${percent(saved, spend + saved)} of ${dollars(spend + saved)} without the gateway`]);
    assert.deepEqual(shown['Cache hit rate'], [percent(hits, hits + misses), `${hits} of ${hits + misses} calls the cache could serve`]);
    const providerCache = sum(rows, (r) => r.saved_provider_cache_usd);
    assert.deepEqual(shown['The provider’s own caching'], [dollars(providerCache), 'saved by the provider’s prompt cache, not in the gateway’s saving']);
    assert.deepEqual(await tableRows(page, '#provider-cache'), [['The provider’s own caching', dollars(providerCache)]]);
    assert.equal(shown['Cache hit rate']![0], '20.0%');

    const byCause = Object.fromEntries((await tableRows(page, '#savings')).map(([cause, amount, share]) => [cause, [amount, share]]));
    const causes: [string, number][] = [
      ['Response cache (hits)', sum(rows, (r) => (r.cache_status === 'hit' ? r.saved_cache_usd : 0))],
      ['In-flight dedup', sum(rows, (r) => (r.cache_status === 'dedup' ? r.saved_cache_usd : 0))],
      ['Compaction', sum(rows, (r) => r.saved_compaction_usd)],
      ['Routing', sum(rows, (r) => r.saved_routing_usd)],
      ['Prompt-cache hints the gateway added', sum(rows, (r) => r.saved_prompt_cache_usd)],
      ['Total', saved],
    ];
    for (const [cause, amount] of causes) assert.deepEqual(byCause[cause], [dollars(amount), percent(amount, saved)], cause);
    assert.equal(byCause['Response cache (hits)']![0], dollars(call('miss').record.cost_usd), 'the hit saved what the first call cost');
    assert.match(await page.locator('#savings ~ p, .figures-scroll + p.muted').first().innerText(), new RegExp(`would have cost \\${dollars(spend + saved)}: the spend, \\${dollars(spend)}, plus what was saved`));

    // The chart's table: 24 hours, each with the spend, cost without the gateway and saving of the calls made in it.
    const hourRows = await tableRows(page, '#cost-figures');
    const hours = await page.locator('#cost-figures tbody time').evaluateAll((times) => times.map((t) => Date.parse(t.getAttribute('datetime')!)));
    assert.equal(hours.length, 24);
    const inHour = (start: number) => rows.filter((r) => Date.parse(r.created_at) >= start && Date.parse(r.created_at) < start + 3_600_000);
    assert.equal(sum(hours, (h) => inHour(h).length), 5, 'every call in one of the 24 hours');
    assert.deepEqual(
      hourRows.map((r) => r.slice(1)),
      hours.map((h) => {
        const [cost, kept] = [sum(inHour(h), (r) => r.cost_usd), sum(inHour(h), (r) => r.cost_saved_usd)];
        return [dollars(cost), dollars(cost + kept), dollars(kept)];
      }),
    );
    // The chart's own data, unrounded: the calls' spend and cost without the gateway, to the billionth of a cent.
    const chart = await chartData(page, 'cost-chart-data');
    assert.equal(chart.labels.length, 24);
    assert.deepEqual(chart.series.map((s) => s.name), ['Spend', 'Without the gateway']);
    near(chart.series[0]!.values.reduce((x, y) => x + y, 0), spend, 'the chart’s spend');
    near(chart.series[1]!.values.reduce((x, y) => x + y, 0), spend + saved, 'the chart’s cost without the gateway');
    assert.equal(await page.locator('#latency caption').innerText(), 'Latency percentiles over 5 calls');
    await chartsDrawn(page, 1);
    await ui.shoot(page, 'figures-overview');
  });

  test('Usage over 24 hours, by model and by tag: each group’s requests, failures, tokens, spend, saved and hit rate; the CSV downloaded from the page has the same rows', async () => {
    const page = a.page;
    const rows = made.map((m) => m.record);
    /** Each group's figures as the page's table shows them, computed from the records. */
    const expected = (key: (r: RequestDetail) => string) => {
      const groups = new Map<string, RequestDetail[]>();
      for (const r of rows) groups.set(key(r), [...(groups.get(key(r)) ?? []), r]);
      return new Map(
        [...groups].map(([name, members]) => {
          const spend = sum(members, (r) => r.cost_usd);
          const saved = sum(members, (r) => r.cost_saved_usd);
          const served = members.filter((r) => r.cache_status === 'hit').length;
          const could = members.filter((r) => r.cache_status !== 'bypass').length;
          return [
            name,
            [
              count(members.length),
              count(members.filter((r) => r.status >= 400).length),
              count(sum(members, (r) => r.prompt_tokens)),
              count(sum(members, (r) => r.completion_tokens)),
              dollars(spend),
              dollars(spend + saved),
              dollars(saved),
              could === 0 ? '–none' : percent(served, could),
            ],
          ];
        }),
      );
    };
    const shownGroups = async () => new Map((await tableRows(page, '#groups')).map(([name, ...figures]) => [name!, figures]));

    await go(page, '/usage?period=24h');
    assert.equal(await page.locator('#group_by').inputValue(), 'model');
    assert.deepEqual((await stats(page))['Requests'], ['5', '1 failed']);
    const byModel = expected((r) => r.model_used ?? r.model_requested);
    assert.deepEqual(await shownGroups(), byModel);
    assert.ok(byModel.has('openai/gpt-4o-mini') && byModel.get('openai/gpt-4o-mini')![0] === '4', 'four calls named gpt-4o-mini');
    // The bar chart's data, unrounded: each model's spend.
    const bars = await chartData(page, 'group-chart-data');
    assert.deepEqual(new Set(bars.labels), new Set(byModel.keys()));
    for (const [i, model] of bars.labels.entries()) {
      near(bars.series[0]!.values[i]!, sum(rows.filter((r) => (r.model_used ?? r.model_requested) === model), (r) => r.cost_usd), model);
    }
    await chartsDrawn(page, 2);
    await ui.shoot(page, 'figures-usage-by-model');

    await page.getByLabel('Group by').selectOption({ label: 'Tag' });
    await submitting(page, () => page.getByRole('button', { name: 'Show' }).click());
    assert.equal(new URL(page.url()).searchParams.get('group_by'), 'tag');
    const byTag = expected((r) => r.tag ?? '(no tag)');
    assert.deepEqual(await shownGroups(), byTag);
    assert.deepEqual(byTag.get('nightly-eval')!.slice(0, 2), ['2', '0']);
    assert.deepEqual(byTag.get('agent')!.slice(0, 2), ['2', '1']);
    assert.equal(byTag.get('nightly-eval')![7], '50.0%');
    await chartsDrawn(page, 2);
    await ui.shoot(page, 'figures-usage-by-tag');

    // The CSV, as the browser downloads it from the page's link.
    const downloading = page.waitForEvent('download');
    await page.getByRole('link', { name: 'Download as CSV' }).click();
    const download = await downloading;
    assert.match(download.suggestedFilename(), /^usage-by-tag-\d{4}-\d{2}-\d{2}-to-\d{4}-\d{2}-\d{2}\.csv$/);
    const csv = readFileSync((await download.path())!, 'utf8');
    assert.ok(csv.endsWith('\r\n'));
    const [head, ...lines] = csv.trimEnd().split('\r\n').map((l) => l.split(','));
    assert.deepEqual(head!.slice(0, 9), ['tag', 'requests', 'errors', 'prompt_tokens', 'completion_tokens', 'tokens_saved', 'cost_usd', 'cost_without_gateway_usd', 'cost_saved_usd']);
    const col = (line: string[], name: string) => line[head!.indexOf(name)]!;
    const csvGroups = new Map(lines.map((l) => [l[0] === '' ? '(no tag)' : l[0]!, l]));
    assert.deepEqual([...csvGroups.keys()].sort(), [...byTag.keys()].sort(), 'the same groups');
    for (const [tag, line] of csvGroups) {
      const members = rows.filter((r) => (r.tag ?? '(no tag)') === tag);
      assert.equal(col(line, 'requests'), String(members.length), tag);
      assert.equal(col(line, 'errors'), String(members.filter((r) => r.status >= 400).length), tag);
      assert.equal(col(line, 'prompt_tokens'), String(sum(members, (r) => r.prompt_tokens)), tag);
      assert.equal(col(line, 'tokens_saved'), String(sum(members, (r) => r.saved_tokens)), tag);
      for (const [name, pick] of [
        ['cost_usd', (r: RequestDetail) => r.cost_usd],
        ['cost_saved_usd', (r: RequestDetail) => r.cost_saved_usd],
        ['saved_compaction_usd', (r: RequestDetail) => r.saved_compaction_usd],
        ['saved_routing_usd', (r: RequestDetail) => r.saved_routing_usd],
      ] as const) {
        assert.ok(Math.abs(Number(col(line, name)) - sum(members, pick)) < 1e-8, `${tag} ${name}: ${col(line, name)}`);
      }
      // And the page's row says the same, in its own format.
      assert.deepEqual(byTag.get(tag)!.slice(0, 4), [col(line, 'requests'), col(line, 'errors'), count(Number(col(line, 'prompt_tokens'))), count(Number(col(line, 'completion_tokens')))]);
      assert.equal(byTag.get(tag)![4], dollars(Number(col(line, 'cost_usd'))), tag);
    }
  });

  test('Requests: every call newest first with its status, cache outcome, tokens, cost and saving; Cache = hit and Status = errors narrow it to the one call each', async () => {
    const page = a.page;
    await go(page, '/requests');
    const rows = await logRows(page);
    assert.deepEqual(
      rows.map((r) => r.id),
      made.map((m) => m.id).reverse(),
      'newest first',
    );
    for (const row of rows) {
      const m = made.find((x) => x.id === row.id)!;
      const r = m.record;
      // Time, status, model, key, tag, session, cache, tokens, cost, saved, latency.
      const [, status, model, key, tag, session, cache, tokens, cost, saved] = row.cells;
      assert.equal(status, r.error_code ? `${r.status} ${r.error_code}` : String(r.status), m.what);
      assert.equal(model!.split(' ')[0], r.model_requested, m.what);
      assert.equal(key, 'figures-bot', m.what);
      assert.equal(tag, r.tag ?? 'none', m.what);
      assert.equal(session, r.session_id ?? 'none', m.what);
      assert.equal(cache, r.cache_status, m.what);
      assert.equal(tokens, `${count(r.prompt_tokens)} / ${count(r.completion_tokens)}`, m.what);
      assert.equal(cost, usd(r.cost_usd), m.what);
      assert.equal(saved, r.cost_saved_usd > 0 ? usd(r.cost_saved_usd) : 'none', m.what);
    }
    assert.match(rows.find((r) => r.id === call('routed').id)!.cells[2]!, new RegExp(`^auto → answered by ${call('routed').headers.get('x-gateway-model')}$`));
    await ui.shoot(page, 'figures-requests');

    await page.getByLabel('Cache').selectOption({ label: 'Hit (answered from the cache)' });
    await submitting(page, () => page.getByRole('button', { name: 'Show calls' }).click());
    assert.equal(new URL(page.url()).searchParams.get('cache_status'), 'hit');
    assert.deepEqual(
      (await logRows(page)).map((r) => r.id),
      [call('hit').id],
    );
    await ui.shoot(page, 'figures-requests-hits');

    await page.getByLabel('Cache').selectOption({ label: 'Any' });
    await page.getByLabel('Status').selectOption({ label: 'Errors (anything but 2xx)' });
    await submitting(page, () => page.getByRole('button', { name: 'Show calls' }).click());
    assert.deepEqual([new URL(page.url()).searchParams.get('status'), new URL(page.url()).searchParams.get('cache_status')], ['error', '']);
    const errors = await logRows(page);
    assert.deepEqual(
      errors.map((r) => r.id),
      [call('failed').id],
    );
    assert.equal(errors[0]!.cells[1], '401 upstream_authentication_failed');
    await ui.shoot(page, 'figures-requests-errors');
  });

  test("each call's page shows what its stage did: the hit what it saved, the compacted call its strategy and tokens removed, the routed call its model and reason, the failed call its status and code", async () => {
    const page = a.page;
    const open = async (what: Made['what']) => {
      await go(page, '/requests');
      // From the log, as a person would: the row's time links to the call's page.
      await submitting(page, () => page.locator(`table.log-table a[href="/requests/${encodeURIComponent(call(what).id)}"]`).click());
      assert.equal(await h1(page), `Request ${call(what).id}`);
      return call(what).record;
    };

    const paid = call('miss').record;
    const hit = await open('hit');
    assert.equal((await facts(page, 'cache'))['Status'], 'hit');
    assert.equal((await facts(page, 'cache'))['Saved'], `${usd(paid.cost_usd)} (what the reused answer cost)`);
    assert.equal((await facts(page, 'cache'))['Tokens not paid for'], count(paid.prompt_tokens + paid.completion_tokens));
    assert.equal(count(paid.prompt_tokens + paid.completion_tokens), '1,620', 'the first call’s 1,500 + 120 tokens');
    assert.deepEqual(await facts(page, 'cost'), { Cost: '$0', Saved: usd(hit.cost_saved_usd), 'Without the gateway': usd(hit.cost_saved_usd) });
    assert.match(await sectionText(page, 'attempts'), /None: the answer came from the cache\./);
    assert.deepEqual([(await facts(page, ''))['Tag'], (await facts(page, ''))['Session']], ['nightly-eval', 'eval-run-7']);
    await ui.shoot(page, 'figures-request-hit');

    const compacted = await open('compacted');
    const removed = Number(call('compacted').headers.get('x-gateway-tokens-saved'));
    assert.match(await sectionText(page, 'compaction'), /Strategies applied:\s+tool-output: the middle of a long tool output cut, its head and tail kept/);
    assert.deepEqual(await facts(page, 'compaction'), { 'Prompt tokens removed': count(removed), Saved: usd(compacted.saved_compaction_usd) });
    assert.equal(compacted.compaction_saved_tokens, removed);
    // The body kept is the one the provider got: the log's middle replaced by the gateway's note.
    assert.match(await page.locator('#request-body').innerText(), /\[gateway: [\d,]+ lines \([\d,]+ characters\) removed from the middle of this output\]/);
    await ui.shoot(page, 'figures-request-compacted');

    const routed = await open('routed');
    assert.deepEqual(await facts(page, 'routing'), {
      'Model asked for': 'auto',
      'Model that answered': call('routed').headers.get('x-gateway-model')!,
      Provider: 'openai',
      Reason: call('routed').headers.get('x-gateway-route-reason')!,
      'Saved by routing': usd(routed.saved_routing_usd),
    });
    await ui.shoot(page, 'figures-request-routed');

    const failed = await open('failed');
    assert.equal((await facts(page, ''))['Status'], '401 Unauthorized upstream_authentication_failed');
    assert.equal(failed.error_code, 'upstream_authentication_failed');
    assert.match(await sectionText(page, 'attempts'), /upstream_authentication_failed/);
    assert.deepEqual((await facts(page, 'cost'))['Cost'], usd(failed.cost_usd));
    assert.match(await sectionText(page, 'bodies'), /None: the call failed \(upstream_authentication_failed\)\./);
    // An error is never cached: the page must not say its answer was stored.
    assert.match(await sectionText(page, 'cache'), /the call failed, so nothing was stored/);
    assert.equal((await facts(page, 'routing'))['Model called (it did not answer)'] !== undefined, true, 'the refusing model is not "the model that answered"');
    await ui.shoot(page, 'figures-request-failed');
  });

  test("workspace B, signed in in another browser context, sees none of A's figures, and A's call is a 404 page for B", async () => {
    ({ context: b.context, page: b.page } = await ui.newPage());
    const page = b.page;
    await ui.signIn(page, b.email);
    const secrets = [...made.map((m) => m.id), 'nightly-eval', 'eval-run-7', 'agent-run-1', 'figures-bot', a.name];
    const clean = async (where: string) => {
      const html = await page.content();
      for (const s of secrets) assert.ok(!html.includes(s), `${where} shows ${s}`);
    };

    await go(page, '/?period=24h');
    assert.deepEqual((await stats(page))['Requests'], ['0', 'none failed']);
    assert.deepEqual((await stats(page))['Spend'], ['$0.00', '0 tokens in, 0 out']);
    assert.match(await page.locator('main').innerText(), /No calls in this period\./);
    await ui.audit(page);
    await clean('Overview');

    for (const group of ['model', 'tag']) {
      await go(page, `/usage?period=24h&group_by=${group}`);
      assert.deepEqual((await stats(page))['Requests'], ['0', 'none failed']);
      assert.equal(await page.locator('#groups').count(), 0);
      await ui.audit(page);
      await clean(`Usage by ${group}`);
    }
    const csv = await page.evaluate((u) => fetch(u).then((r) => r.text()), `${gw.url}/usage.csv?period=24h&group_by=tag`);
    assert.equal(csv, 'tag,requests,errors,prompt_tokens,completion_tokens,tokens_saved,cost_usd,cost_without_gateway_usd,cost_saved_usd,saved_cache_usd,saved_dedup_usd,saved_compaction_usd,saved_routing_usd,saved_prompt_cache_usd,saved_provider_cache_usd,cache_hits,dedup_hits,cache_misses,cache_hit_rate\r\n');

    await go(page, '/requests');
    assert.equal(await page.locator('table.log-table').count(), 0);
    assert.match(await page.locator('main').innerText(), /No calls match from/);
    await ui.audit(page);
    await clean('Requests');

    for (const m of made) {
      assert.equal(await go(page, `/requests/${encodeURIComponent(m.id)}`), 404, m.what);
      assert.equal(await h1(page), 'Request not found');
      assert.match(await page.getByRole('alert').innerText(), /a request id of another workspace is not found either/);
      await ui.audit(page);
    }
    await ui.shoot(page, 'figures-b-request-not-found');
    await go(page, '/?period=24h');
    await ui.shoot(page, 'figures-b-overview');
    await a.context.close();
    await b.context.close();
  });
});

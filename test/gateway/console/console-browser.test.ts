import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { ConsoleAssets } from '../../../src/gateway/console/assets.ts';
import { CONSOLE_CSP } from '../../../src/gateway/console/layout.ts';
import { escapeHtml } from '../../../src/platform/html.ts';
import { createFakeProvider, type FakeProvider } from '../../../tools/fake-provider/server.ts';
import { chromiumSkip, launchChromium } from '../../helpers/chromium.ts';
import { ConsoleBrowser, h1, MailInbox, path, submitting } from '../../helpers/console-browser.ts';
import { type LiveGateway, startLiveGateway } from '../../helpers/gateway-service.ts';

/** Git-ignored: every page at desktop and phone width, for a person to look at (the best are copied to docs/images/). */
const SHOTS = join(import.meta.dirname, '..', '..', '.screenshots', 'console');

/**
 * The console as a person uses it: real Chromium, the whole gateway (data
 * plane included) on a real port in front of the fake provider, sign-in by
 * the link of the sign-in email. Every page the browser loads is audited
 * (audit()): the CSP header, no inline script or handler, labels, heading
 * order, no horizontal scrolling on a phone, no console error (a CSP
 * violation is one).
 */
describe('the console in Chromium', { skip: chromiumSkip }, () => {
  let browser: Browser;
  let gw: LiveGateway;
  let strict: FakeProvider;
  let attacker: Server;
  let attackerPort: number;
  /** What the attacker's page posts: its target and fields, set by the test before it opens the page. */
  let attack: { action: string; fields: Record<string, string> } = { action: '', fields: {} };
  const inbox = new MailInbox();
  /** This suite's pages with their errors and documents, audit(), shoot(), signIn() (test/helpers/console-browser.ts). */
  let ui: ConsoleBrowser;
  const a = { email: `console-a-${process.pid}@example.com`, name: 'Acme Research', context: undefined as unknown as BrowserContext, page: undefined as unknown as Page };
  const b = { email: `console-b-${process.pid}@example.com`, name: 'Beta Labs', context: undefined as unknown as BrowserContext, page: undefined as unknown as Page };
  let aKey = '';

  before(async () => {
    browser = await launchChromium();
    gw = await startLiveGateway('sqlite', {}, { transport: inbox.transport });
    ui = new ConsoleBrowser({ browser, baseUrl: gw.url, inbox, shots: SHOTS });
    strict = await createFakeProvider({ apiKey: 'sk-the-right-key-0000' });
    for (const who of [a, b]) {
      const r = await gw.api('/api/v1/signup', { body: { name: who.name, email: who.email } });
      assert.equal(r.status, 201);
      await inbox.confirmSignup(who.email, gw.url);
    }
    // Another origin on this machine: at 127.0.0.1 it is the gateway's site (same-site, cookies sent), at localhost another site.
    attacker = createServer((_req, res) => {
      const inputs = Object.entries(attack.fields)
        .map(([k, v]) => `<input type="hidden" name="${escapeHtml(k)}" value="${escapeHtml(v)}">`)
        .join('');
      res
        .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
        .end(`<!doctype html><html><body><form method="post" action="${escapeHtml(attack.action)}">${inputs}</form><script>document.forms[0].submit()</script></body></html>`);
    });
    await new Promise<void>((resolve) => attacker.listen(0, '127.0.0.1', resolve));
    attackerPort = (attacker.address() as AddressInfo).port;
  });
  after(async () => {
    await browser?.close();
    attacker?.closeAllConnections();
    await new Promise<void>((resolve) => (attacker ? attacker.close(() => resolve()) : resolve()));
    await strict?.close();
    await gw?.close();
  });

  const main = (page: Page) => page.locator('main').innerText();
  const card = (page: Page, heading: string) => page.locator('li.card').filter({ has: page.getByRole('heading', { name: heading, exact: true }) });
  /** The <summary> that opens one of a card's <details>. */
  const opener = (within: ReturnType<typeof card>, text: string) => within.locator('summary').filter({ hasText: text });
  const sdk = (key: string) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 });
  const hello = (key: string) => sdk(key).chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hello' }] });

  test('pages redirect to the sign-in page until one signs in', async () => {
    const { context, page } = await ui.newPage();
    for (const p of ['/', '/api-keys', '/provider-keys']) {
      await page.goto(`${gw.url}${p}`);
      assert.equal(path(page), '/sign-in', p);
    }
    assert.equal(await h1(page), 'Sign in to the AI gateway console');
    await ui.shoot(page, '01-sign-in');
    await context.close();
  });

  test('sign in by the link of the sign-in email, and land on the console; the cookie is HttpOnly and SameSite=Lax', async () => {
    ({ context: a.context, page: a.page } = await ui.newPage({ permissions: ['clipboard-read', 'clipboard-write'] }));
    await ui.signIn(a.page, a.email, '02');
    assert.equal(await h1(a.page), 'Overview');
    assert.match(await a.page.locator('header').innerText(), new RegExp(a.name));
    assert.match(await main(a.page), /0 keys stored/);
    await ui.shoot(a.page, '03-overview');
    const cookie = (await a.context.cookies(gw.url)).find((c) => c.name === 'gw_console');
    assert.ok(cookie, 'the console cookie');
    assert.match(cookie.value, /^gws_/);
    assert.equal(cookie.httpOnly, true);
    assert.equal(cookie.sameSite, 'Lax');
    assert.equal(cookie.secure, false, 'development over http: not Secure (production: Secure and __Host-)');
    assert.equal(await a.page.evaluate(() => document.cookie), '', 'no script can read it');
  });

  test('provider keys: add one pointing at the fake, see its last 4 and base_url, test it (OK), replace it', async () => {
    const page = a.page;
    await submitting(page, () => page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Provider keys' }).click());
    assert.equal(await h1(page), 'Provider keys');
    await ui.audit(page);
    await page.getByLabel('Provider').selectOption({ label: 'OpenAI' });
    await page.locator('#add-key').fill('sk-fake-first-1111');
    await page.locator('#add-base-url').fill(`${gw.fake.url}/v1`);
    await submitting(page, () => page.getByRole('button', { name: 'Save key' }).click());
    assert.match(await page.getByRole('status').first().innerText(), /Key saved/);
    const openai = card(page, 'OpenAI');
    assert.match(await openai.innerText(), /…1111/);
    assert.match(await openai.innerText(), new RegExp(`${gw.fake.url}/v1`.replaceAll('.', '\\.')));
    assert.doesNotMatch(await page.content(), /sk-fake-first/);

    gw.fake.calls.clear();
    await submitting(page, () => openai.getByRole('button', { name: 'Test OpenAI key' }).click());
    const ok = card(page, 'OpenAI').getByRole('status');
    assert.match(await ok.innerText(), /^OK: the provider accepted the key \(\d+ ms\)\. It lists 3 models\.$/);
    assert.equal(gw.fake.calls.last()?.route, 'models', 'one call to the model list');
    assert.equal(gw.fake.calls.last()?.headers.authorization, 'Bearer sk-fake-first-1111');
    assert.equal(gw.fake.calls.count, 1);
    await ui.shoot(page, '04-provider-keys-test-ok');

    await opener(card(page, 'OpenAI'), 'Replace the OpenAI key').click();
    await card(page, 'OpenAI').getByLabel('API key').fill('sk-fake-second-2222');
    assert.equal(await card(page, 'OpenAI').getByLabel('Base URL (optional)').inputValue(), `${gw.fake.url}/v1`);
    await submitting(page, () => card(page, 'OpenAI').getByRole('button', { name: 'Replace key' }).click());
    assert.match(await card(page, 'OpenAI').innerText(), /…2222/);
    await submitting(page, () => card(page, 'OpenAI').getByRole('button', { name: 'Test OpenAI key' }).click());
    assert.match(await card(page, 'OpenAI').getByRole('status').innerText(), /^OK/);
    assert.equal(gw.fake.calls.last()?.headers.authorization, 'Bearer sk-fake-second-2222');
  });

  test("a key the provider refuses: the test shows the provider's error; then the key is deleted", async () => {
    const page = a.page;
    await page.getByLabel('Provider').selectOption({ label: 'OpenAI-compatible server' });
    await page.locator('#add-key').fill('sk-the-wrong-key-9999');
    await page.locator('#add-base-url').fill(`${strict.url}/v1`);
    await submitting(page, () => page.getByRole('button', { name: 'Save key' }).click());
    const compatible = card(page, 'OpenAI-compatible server');
    await submitting(page, () => compatible.getByRole('button', { name: 'Test OpenAI-compatible server key' }).click());
    const failed = card(page, 'OpenAI-compatible server').getByRole('alert');
    assert.match(
      await failed.innerText(),
      /^Failed: The OpenAI-compatible server API refused the OpenAI-compatible server key stored for this tenant: .+ \(upstream_authentication_failed, HTTP 401\)$/,
    );
    await ui.shoot(page, '05-provider-keys-test-failed');
    await opener(card(page, 'OpenAI-compatible server'), 'Delete the OpenAI-compatible server key').click();
    await submitting(page, () => card(page, 'OpenAI-compatible server').getByRole('button', { name: 'Delete the OpenAI-compatible server key now' }).click());
    assert.match(await page.getByRole('status').first().innerText(), /Key deleted/);
    assert.equal(await card(page, 'OpenAI-compatible server').count(), 0);
    const listed = await gw.api('/api/v1/tenant/provider-keys', { token: (await a.context.cookies(gw.url)).find((c) => c.name === 'gw_console')!.value });
    assert.deepEqual(
      listed.body.provider_keys.map((k: { provider: string }) => k.provider),
      ['openai'],
    );
  });

  test('API keys: create one with the keyboard, see it once with a copy button, then call the gateway with it through the openai SDK', async () => {
    const page = a.page;
    await page.goto(`${gw.url}/api-keys`);
    await ui.audit(page);
    // Keyboard only: the skip link comes first and shows where the focus is.
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Skip to content');
    assert.notEqual(await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle), 'none', 'focus is visible');
    await page.getByLabel('Name', { exact: true }).focus();
    await page.keyboard.type('ci-bot');
    await submitting(page, () => page.keyboard.press('Enter'));
    assert.equal(await page.getByRole('heading', { level: 2, name: /Your new key/ }).innerText(), 'Your new key “ci-bot”');
    aKey = await page.locator('#new-key').inputValue();
    assert.match(aKey, /^sk-gw-[A-Za-z0-9_-]{43}$/);
    const copy = page.getByRole('button', { name: 'Copy' });
    assert.equal(await copy.isVisible(), true, 'the script reveals the copy button');
    await copy.click();
    await page.waitForFunction(() => document.getElementById('new-key-status')?.textContent !== '');
    assert.equal(await page.locator('#new-key-status').innerText(), 'Copied to the clipboard.');
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), aKey);
    await ui.shoot(page, '06-api-key-created');

    const answer = await hello(aKey);
    assert.match(answer.choices[0]!.message.content ?? '', /^echo: hello/);

    await page.goto(`${gw.url}/api-keys`);
    assert.ok(!(await page.content()).includes(aKey), 'shown once: not on the list');
    assert.match(await card(page, 'ci-bot').innerText(), new RegExp(`${aKey.slice(0, 10)}…`));
  });

  test('a per-key limit set in the form is enforced: the next calls are refused with 429', async () => {
    const page = a.page;
    const ci = card(page, 'ci-bot');
    await opener(ci, 'Change the limits of ci-bot').click();
    // A value the Limits schema refuses: the error is next to its field, announced, and the field has the focus.
    await ci.getByLabel('Requests per minute').fill('lots');
    await submitting(page, () => ci.getByRole('button', { name: 'Save limits' }).click());
    assert.equal(ui.documents.at(-1)?.status, 400);
    const field = card(page, 'ci-bot').getByLabel('Requests per minute');
    assert.equal(await card(page, 'ci-bot').getByRole('alert').innerText(), 'Requests per minute must be a whole number from 1 to 1,000,000, or empty for no limit.');
    assert.equal(await field.getAttribute('aria-invalid'), 'true');
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('name')), 'requests_per_minute');
    await ui.shoot(page, '07-api-keys-field-error');
    await field.fill('1');
    await submitting(page, () => card(page, 'ci-bot').getByRole('button', { name: 'Save limits' }).click());
    assert.match(await page.getByRole('status').first().innerText(), /Limits saved/);
    assert.match(await card(page, 'ci-bot').innerText(), /Requests per minute: 1\b/);
    // One request a UTC minute: of three calls in a row at least one is refused, whatever minute they start in.
    const outcomes: (number | 'ok')[] = [];
    for (let i = 0; i < 3; i++) {
      try {
        await hello(aKey);
        outcomes.push('ok');
      } catch (err) {
        assert.ok(err instanceof OpenAI.APIError, String(err));
        outcomes.push(err.status ?? 0);
        assert.equal(err.status, 429);
        assert.equal(err.code, 'rate_limit_exceeded');
      }
    }
    assert.ok(outcomes.includes(429), `outcomes: ${outcomes}`);
    await page.reload();
    await ui.shoot(page, '07-api-keys-limits-saved');
  });

  test('revoking the key refuses its next call with 401', async () => {
    const page = a.page;
    // The keyboard again: the summary opens with Enter, the button is the next stop.
    const ci = card(page, 'ci-bot');
    await opener(ci, 'Revoke ci-bot').focus();
    await page.keyboard.press('Enter');
    await ci.getByRole('button', { name: 'Revoke ci-bot now' }).focus();
    await submitting(page, () => page.keyboard.press('Enter'));
    assert.equal(new URL(page.url()).search, '?notice=revoked');
    assert.match(await page.getByRole('status').first().innerText(), /Key revoked/);
    assert.equal(await card(page, 'ci-bot').count(), 0);
    await assert.rejects(hello(aKey), (err: unknown) => err instanceof OpenAI.AuthenticationError && err.status === 401);
  });

  test("tenant B's console shows nothing of tenant A's, and cannot act on it", async () => {
    // A keeps a live key whose name and prefix B must not see.
    await a.page.getByLabel('Name', { exact: true }).fill('a-only-production');
    await submitting(a.page, () => a.page.getByRole('button', { name: 'Create key' }).click());
    const liveKey = await a.page.locator('#new-key').inputValue();
    await a.page.goto(`${gw.url}/api-keys`);
    const aKeyId = (await card(a.page, 'a-only-production').getAttribute('id'))!.slice('key-'.length);

    ({ context: b.context, page: b.page } = await ui.newPage());
    await ui.signIn(b.page, b.email);
    for (const p of ['/', '/api-keys', '/provider-keys']) {
      await b.page.goto(`${gw.url}${p}`);
      await ui.audit(b.page);
      const html = await b.page.content();
      for (const secret of ['a-only-production', aKeyId, liveKey.slice(0, 10), '2222', a.name, a.email]) {
        assert.ok(!html.includes(secret), `${p} shows ${secret}`);
      }
    }
    assert.match(await b.page.locator('header').innerText(), new RegExp(b.name));
    // B's own form, pointed at A's key: the same answer as for a key that does not exist.
    await b.page.goto(`${gw.url}/api-keys`);
    await submitting(b.page, () =>
      b.page.evaluate((id) => {
        const form = document.querySelector<HTMLFormElement>('form[action$="/revoke"]')!;
        form.action = `/api-keys/${id}/revoke`;
        form.submit();
      }, aKeyId),
    );
    assert.equal(ui.documents.at(-1)?.status, 404);
    assert.match(await b.page.getByRole('alert').innerText(), /No API key with this id belongs to this tenant/);
    const still = await hello(liveKey);
    assert.match(still.choices[0]!.message.content ?? '', /^echo:/);
  });

  test('a POST without the CSRF token is refused (403); so is a form posted from another origin, with or without the token', async () => {
    const page = a.page;
    const names = async () => (await gw.service.deps.db.selectFrom('api_keys').select('name').where('revoked_at', 'is', null).execute()).map((r) => r.name);
    await page.goto(`${gw.url}/api-keys`);
    const token = await page.locator('form[action="/api-keys"] input[name=csrf]').inputValue();
    await page.getByLabel('Name', { exact: true }).fill('no-token');
    await page.evaluate(() => document.querySelector('form[action="/api-keys"] input[name=csrf]')!.remove());
    await submitting(page, () => page.getByRole('button', { name: 'Create key' }).click());
    assert.equal(ui.documents.at(-1)?.status, 403);
    assert.equal(await h1(page), 'This form was refused');
    assert.match(await page.getByRole('alert').innerText(), /expired or did not come from this console/);
    await ui.shoot(page, '08-csrf-refused');

    // Same site (another port of 127.0.0.1): the browser sends the cookie, Sec-Fetch-Site says same-site, Origin is foreign.
    attack = { action: `${gw.url}/api-keys`, fields: { csrf: token, name: 'attack-same-site' } };
    await page.goto(`http://127.0.0.1:${attackerPort}/`);
    await page.waitForURL((u) => u.href.startsWith(gw.url));
    assert.equal(ui.documents.at(-1)?.status, 403);
    assert.match(await page.getByRole('alert').innerText(), /sent from another site/);
    // Another site (localhost): SameSite=Lax keeps the cookie home, so the post is not even signed in (303 to /sign-in).
    attack = { action: `${gw.url}/api-keys`, fields: { csrf: token, name: 'attack-cross-site' } };
    await page.goto(`http://localhost:${attackerPort}/`);
    await page.waitForURL((u) => u.href.startsWith(gw.url));
    const posted = ui.documents.findLast((d) => d.method === 'POST');
    assert.deepEqual([posted?.path, posted?.status], ['/api-keys', 303]);
    const live = await names();
    for (const name of ['no-token', 'attack-same-site', 'attack-cross-site']) assert.ok(!live.includes(name), name);
  });

  test('no page runs inline script, and the charting library runs under the same CSP', async () => {
    const page = a.page;
    await page.goto(`${gw.url}/`);
    await ui.audit(page);
    // The policy is enforced: a script without src is blocked.
    await page.addScriptTag({ content: 'window.inlineRan = true;' }).catch(() => undefined);
    assert.equal(await page.evaluate(() => (window as unknown as { inlineRan?: boolean }).inlineRan), undefined);
    const blocked = ui.errors.get(page)!.splice(0);
    assert.ok(blocked.some((e) => /Content Security Policy/.test(e)), 'the browser reports the blocked inline script');
    // Chart.js from the asset route: no eval, no injected style, a drawn chart.
    await page.addScriptTag({ url: new ConsoleAssets().url('chart.umd.min.js') });
    const drawn = await page.evaluate(async () => {
      const canvas = document.createElement('canvas');
      document.querySelector('main')!.append(canvas);
      const Chart = (window as unknown as { Chart: new (c: HTMLCanvasElement, config: unknown) => { destroy(): void } }).Chart;
      const chart = new Chart(canvas, {
        type: 'bar',
        data: { labels: ['Mon', 'Tue', 'Wed'], datasets: [{ label: 'USD', data: [1, 3, 2] }] },
        options: { animation: false, responsive: false },
      });
      const pixels = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height).data;
      const painted = pixels.some((v, i) => i % 4 === 3 && v !== 0);
      chart.destroy();
      return painted;
    });
    assert.equal(drawn, true, 'the chart drew');
    assert.deepEqual(ui.errors.get(page), [], 'no CSP violation');
    const cspOnEveryDocument = ui.documents.filter((d) => d.status !== 303 && !d.path.startsWith('/assets/'));
    assert.ok(cspOnEveryDocument.length >= 15);
    for (const d of cspOnEveryDocument) assert.equal(d.csp, CONSOLE_CSP, `${d.path} (${d.status})`);
  });

  test('sign out ends the session: the old cookie no longer works', async () => {
    const page = a.page;
    const session = (await a.context.cookies(gw.url)).find((c) => c.name === 'gw_console')!.value;
    await page.goto(`${gw.url}/provider-keys`);
    await ui.shoot(page, '09-provider-keys');
    await submitting(page, () => page.getByRole('button', { name: 'Sign out' }).click());
    assert.equal(path(page), '/sign-in');
    assert.match(await page.getByRole('status').innerText(), /You are signed out/);
    assert.equal((await gw.api('/api/v1/tenant', { token: session })).status, 401);
    await page.goto(`${gw.url}/api-keys`);
    assert.equal(path(page), '/sign-in');
    await a.context.close();
    await b.context.close();
  });
});

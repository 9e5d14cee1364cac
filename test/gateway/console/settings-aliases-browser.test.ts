import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { chromiumSkip, launchChromium } from '../../helpers/chromium.ts';
import { ConsoleBrowser, h1, MailInbox, submitting } from '../../helpers/console-browser.ts';
import { type LiveGateway, startLiveGateway } from '../../helpers/gateway-service.ts';

const SHOTS = join(import.meta.dirname, '..', '..', '.screenshots', 'console');

/**
 * The Settings page's model aliases in real Chromium: a person adds an
 * alias, edits it in its row, sees a refusal next to the field that caused
 * it, removes it; after each step the API reads back what the page shows.
 */
describe('model aliases in the console, in Chromium', { skip: chromiumSkip }, () => {
  let browser: Browser;
  let gw: LiveGateway;
  const inbox = new MailInbox();
  let ui: ConsoleBrowser;
  const email = `aliases-${process.pid}@example.com`;

  before(async () => {
    browser = await launchChromium();
    gw = await startLiveGateway('sqlite', {}, { transport: inbox.transport });
    ui = new ConsoleBrowser({ browser, baseUrl: gw.url, inbox, shots: SHOTS });
    assert.equal((await gw.api('/api/v1/signup', { body: { name: 'Aliases', email } })).status, 201);
    await inbox.confirmSignup(email, gw.url);
  });
  after(async () => {
    await browser?.close();
    await gw?.close();
  });

  const notice = (page: Page) => page.getByRole('status').first().innerText();

  test('add, edit, refuse and remove an alias; the API reads back each change', async () => {
    const { context, page } = await ui.newPage();
    await ui.signIn(page, email);
    const aliases = async () => {
      const session = (await context.cookies(gw.url)).find((c) => c.name === 'gw_console')!.value;
      return (await gw.api('/api/v1/tenant', { token: session })).body.settings.models?.aliases;
    };
    await page.goto(`${gw.url}/settings#model-aliases`);
    assert.equal(await h1(page), 'Settings');
    const section = page.locator('#model-aliases');
    assert.match(await section.innerText(), /No aliases: every model name is called as named/);

    await section.locator('#alias-new-name').fill('claude-haiku-4-5');
    await section.locator('#alias-new-target').fill('openai/gpt-5-mini');
    await submitting(page, () => section.getByRole('button', { name: 'Add alias' }).click());
    assert.equal(await notice(page), 'Alias added. Calls use it from their next request on.');
    await section.locator('#alias-new-name').fill('claude-*');
    await section.locator('#alias-new-target').fill('anthropic/claude-sonnet-4-5');
    await submitting(page, () => section.getByRole('button', { name: 'Add alias' }).click());
    assert.deepEqual(await aliases(), { 'claude-haiku-4-5': 'openai/gpt-5-mini', 'claude-*': 'anthropic/claude-sonnet-4-5' });
    assert.equal(await section.locator('#alias-0-name').inputValue(), 'claude-haiku-4-5');
    assert.equal(await section.locator('#alias-1-target').inputValue(), 'anthropic/claude-sonnet-4-5');
    await ui.shoot(page, 'settings-model-aliases');

    await section.locator('#alias-0-target').fill('openai/gpt-5-nano');
    await submitting(page, () => section.getByRole('button', { name: 'Save claude-haiku-4-5' }).click());
    assert.equal(await notice(page), 'Alias saved. Calls use it from their next request on.');
    assert.deepEqual(await aliases(), { 'claude-haiku-4-5': 'openai/gpt-5-nano', 'claude-*': 'anthropic/claude-sonnet-4-5' });

    await section.locator('#alias-1-target').fill('nowhere/model');
    await submitting(page, () => section.getByRole('button', { name: 'Save claude-*' }).click());
    assert.match(await section.locator('#alias-1-target-error').innerText(), /"nowhere\/model" is not a model written as provider\/model with a provider of this gateway/);
    assert.equal(await section.locator('#alias-1-target').inputValue(), 'nowhere/model', 'what was typed, as typed');
    await ui.audit(page);
    await section.locator('#alias-new-name').fill('claude-haiku-4-5');
    await section.locator('#alias-new-target').fill('openai/gpt-5');
    await submitting(page, () => section.getByRole('button', { name: 'Add alias' }).click());
    assert.match(await section.locator('#alias-new-name-error').innerText(), /claude-haiku-4-5 has an alias already/);
    await section.locator('#alias-new-name').fill('claude haiku');
    await submitting(page, () => section.getByRole('button', { name: 'Add alias' }).click());
    assert.match(await section.locator('#alias-new-name-error').innerText(), /A model name as clients send it/);
    assert.deepEqual(await aliases(), { 'claude-haiku-4-5': 'openai/gpt-5-nano', 'claude-*': 'anthropic/claude-sonnet-4-5' }, 'nothing refused was stored');

    await submitting(page, () => section.getByRole('button', { name: 'Remove claude-haiku-4-5' }).click());
    assert.equal(await notice(page), 'Alias removed.');
    assert.deepEqual(await aliases(), { 'claude-*': 'anthropic/claude-sonnet-4-5' });
    await submitting(page, () => section.getByRole('button', { name: 'Remove claude-*' }).click());
    assert.equal(await aliases(), undefined, 'the last alias removed: the section is reset');
    assert.match(await section.innerText(), /No aliases/);
    await ui.audit(page);
    await context.close();
  });
});

import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { escapeHtml } from '../../../platform/html.ts';
import type { App } from '../../../platform/http.ts';
import { checkProviderKey, type KeyCheck } from '../../control-plane/provider-key-check.ts';
import { deleteProviderKey, listProviderKeys, type ProviderKeyMetadata, putProviderKey } from '../../control-plane/provider-keys.ts';
import { findProvider, PROVIDERS } from '../../providers/registry.ts';
import type { ConsoleContext } from '../console.ts';
import { attempt, csrfField, field, fieldError, formError, formText } from '../forms.ts';
import { renderPage, sendConsolePage } from '../layout.ts';
import { formatTime } from '../time.ts';

/** The API route's bounds (control-keys.ts); the domain function checks everything else. */
const KeyForm = Type.Object({
  csrf: Type.Optional(Type.String({ maxLength: 128 })),
  form: Type.Optional(Type.String({ maxLength: 16 })),
  provider: Type.Optional(Type.String({ maxLength: 64 })),
  key: Type.Optional(Type.String({ maxLength: 4096 })),
  base_url: Type.Optional(Type.String({ maxLength: 2048 })),
});
const Provider = Type.Object({ provider: Type.String({ maxLength: 64 }) });
const NOTICES = {
  saved: 'Key saved. Calls use it from the next request on.',
  deleted: 'Key deleted.',
} as const;
const Query = Type.Object({ notice: Type.Optional(Type.Union(Object.keys(NOTICES).map((k) => Type.Literal(k)))) });

interface PageState {
  notice?: string | undefined;
  error?: string | undefined;
  /** The outcome of a "test" for one provider. */
  check?: KeyCheck | undefined;
  /** A failed add (`form: 'add'`) or replace (`form: <provider>`), with what was typed (never the key itself). */
  failed?: { form: string; values: Record<string, string>; errors: Record<string, string> } | undefined;
}

/**
 * Provider keys: add (or replace: one key per provider), delete, and test
 * against the provider. Storage, validation (provider, key, base_url with
 * its SSRF rules) and sealing are provider-keys.ts's, as for the API; the
 * page shows only what the API lists: provider, last 4 characters,
 * base_url, when it was stored.
 */
export async function providerKeyPages(app: App, ctx: ConsoleContext): Promise<void> {
  const { deps } = ctx;

  async function render(request: FastifyRequest, reply: FastifyReply, status: number, state: PageState): Promise<FastifyReply> {
    const { tenantId, binding } = ctx.session(request);
    const csrf = ctx.csrf.tokenFor(binding);
    const keys = await listProviderKeys(deps, tenantId);
    const add = state.failed?.form === 'add' ? state.failed : undefined;
    const addErrors = add?.errors ?? {};
    const chosen = add?.values['provider'] ?? '';
    const options = PROVIDERS.map((p) => `<option value="${escapeHtml(p.id)}"${p.id === chosen ? ' selected' : ''}>${escapeHtml(p.name)}</option>`).join('');
    const body = `<h1>Provider keys</h1>
      ${state.notice ? `<p class="notice" role="status">${escapeHtml(state.notice)}</p>` : ''}
      ${state.error ? `<p class="form-error" role="alert">${escapeHtml(state.error)}</p>` : ''}
      <section aria-labelledby="stored-title">
        <h2 id="stored-title">Stored keys</h2>
        ${keys.length === 0 ? '<p class="muted">No provider keys yet. Add one below: the gateway calls each provider with your own key.</p>' : `<ul class="cards">${keys.map((k) => keyCard(k, csrf, state)).join('')}</ul>`}
      </section>
      <section aria-labelledby="add-title" class="panel">
        <h2 id="add-title">Add a key</h2>
        <p class="muted">Keys are sealed (AES-256-GCM) as soon as they arrive and never shown again, only their last 4 characters. Adding a key for a provider that has one replaces it.</p>
        <form method="post" action="/provider-keys" class="stack" novalidate>
          ${csrfField(csrf)}
          <input type="hidden" name="form" value="add">
          ${formError(addErrors)}
          <div class="field${addErrors['provider'] ? ' invalid' : ''}">
            <label for="add-provider">Provider</label>
            <select id="add-provider" name="provider"${addErrors['provider'] ? ' aria-invalid="true" aria-describedby="add-provider-error" autofocus' : ''}>${options}</select>
            ${fieldError('add-provider', addErrors['provider'])}
          </div>
          ${keyFields('add', add?.values['base_url'] ?? '', addErrors)}
          <button type="submit">Save key</button>
        </form>
      </section>`;
    return sendConsolePage(reply, status, renderPage(await ctx.signedInFrame(request, 'Provider keys', 'provider-keys'), body));
  }

  app.get('/provider-keys', { schema: { hide: true, querystring: Query } }, async (request, reply) =>
    render(request, reply, 200, { notice: request.query.notice ? NOTICES[request.query.notice as keyof typeof NOTICES] : undefined }),
  );

  app.post('/provider-keys', { schema: { hide: true, body: KeyForm } }, async (request, reply) => {
    const provider = formText(request.body, 'provider');
    const baseUrl = formText(request.body, 'base_url');
    const form = formText(request.body, 'form') === 'add' ? 'add' : provider;
    const saved = await attempt(() =>
      putProviderKey(deps, ctx.session(request).tenantId, { provider, key: formText(request.body, 'key'), baseUrl: baseUrl.trim() === '' ? undefined : baseUrl }),
    );
    if (!saved.ok) return render(request, reply, saved.status, { failed: { form, values: { provider, base_url: baseUrl }, errors: saved.errors } });
    return reply.redirect(`/provider-keys?notice=saved#provider-${encodeURIComponent(saved.value.provider)}`, 303);
  });

  app.post('/provider-keys/:provider/delete', { schema: { hide: true, params: Provider } }, async (request, reply) => {
    const deleted = await attempt(() => deleteProviderKey(deps, ctx.session(request).tenantId, request.params.provider));
    if (!deleted.ok) return render(request, reply, deleted.status, { error: Object.values(deleted.errors)[0] });
    return reply.redirect('/provider-keys?notice=deleted', 303);
  });

  app.post('/provider-keys/:provider/test', { schema: { hide: true, params: Provider } }, async (request, reply) => {
    const checked = await attempt(() => checkProviderKey(deps, ctx.session(request).tenantId, request.params.provider));
    if (!checked.ok) return render(request, reply, checked.status, { error: Object.values(checked.errors)[0] });
    return render(request, reply, 200, { check: checked.value });
  });
}

/** The key and base_url inputs of the add and replace forms; the key is never shown back, not even after an error. */
function keyFields(prefix: string, baseUrl: string, errors: Record<string, string>): string {
  return (
    field({ id: `${prefix}-key`, name: 'key', label: 'API key', type: 'password', required: true, autocomplete: 'off', maxlength: 4096, error: errors['key'] }) +
    field({
      id: `${prefix}-base-url`,
      name: 'base_url',
      label: 'Base URL (optional)',
      type: 'url',
      value: baseUrl,
      autocomplete: 'off',
      maxlength: 2048,
      hint: 'Empty: the provider’s own API. Required for an OpenAI-compatible server, e.g. https://llm.example.com/v1.',
      error: errors['base_url'],
    })
  );
}

function keyCard(key: ProviderKeyMetadata, csrf: string, state: PageState): string {
  const info = findProvider(key.provider);
  const id = escapeHtml(key.provider);
  const name = escapeHtml(info?.name ?? key.provider);
  const replace = state.failed?.form === key.provider ? state.failed : undefined;
  const check = state.check?.provider === key.provider ? state.check : undefined;
  return `<li class="card" id="provider-${id}">
    <h3>${name}</h3>
    <dl class="facts">
      <dt>Key</dt><dd><code>…${escapeHtml(key.key_last4)}</code></dd>
      <dt>Base URL</dt><dd>${key.base_url ? `<code class="wrap">${escapeHtml(key.base_url)}</code>` : `default (<code class="wrap">${escapeHtml(info?.baseUrl ?? '')}</code>)`}</dd>
      <dt>Stored</dt><dd>${formatTime(key.created_at)}</dd>
    </dl>
    <form method="post" action="/provider-keys/${id}/test" class="inline">
      ${csrfField(csrf)}
      <button type="submit" class="secondary">Test ${name} key</button>
    </form>
    ${check ? checkResult(check) : ''}
    <details${replace ? ' open' : ''}>
      <summary>Replace the ${name} key</summary>
      <form method="post" action="/provider-keys" class="stack" novalidate>
        ${csrfField(csrf)}
        <input type="hidden" name="form" value="replace">
        <input type="hidden" name="provider" value="${id}">
        ${formError(replace?.errors ?? {})}
        ${keyFields(`replace-${id}`, replace?.values['base_url'] ?? key.base_url ?? '', replace?.errors ?? {})}
        <button type="submit">Replace key</button>
      </form>
    </details>
    <details>
      <summary>Delete the ${name} key</summary>
      <form method="post" action="/provider-keys/${id}/delete" class="stack">
        ${csrfField(csrf)}
        <p>Calls to ${name} models fail until a key is added again.</p>
        <button type="submit" class="danger">Delete the ${name} key now</button>
      </form>
    </details>
  </li>`;
}

/** What the test found: OK with what the provider listed, or the provider's own refusal as the data plane would report it. */
function checkResult(check: KeyCheck): string {
  if (check.ok) {
    const models = check.models === undefined ? '' : ` It lists ${check.models} model${check.models === 1 ? '' : 's'}.`;
    return `<p class="check ok" role="status"><strong>OK</strong>: the provider accepted the key (${check.ms} ms).${escapeHtml(models)}</p>`;
  }
  return `<p class="check failed" role="alert"><strong>Failed</strong>: ${escapeHtml(check.message)} <span class="muted">(${escapeHtml(check.code)}, HTTP ${check.status})</span></p>`;
}

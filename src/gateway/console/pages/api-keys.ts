import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { escapeHtml } from '../../../platform/html.ts';
import type { App } from '../../../platform/http.ts';
import { createApiKey, KEY_NAME_MAX, listApiKeys, renameApiKey, revokeApiKey, setApiKeyLimits } from '../../control-plane/api-keys.ts';
import { limitsReport } from '../../budgets/consumption.ts';
import type { ConsoleContext } from '../console.ts';
import { attempt, csrfField, field, formError, formText } from '../forms.ts';
import { limitFields, limitsSummary, parseLimitsForm, postedLimitValues } from '../limits-form.ts';
import { renderPage, sendConsolePage } from '../layout.ts';
import { formatTime } from '../time.ts';

const Text = Type.Optional(Type.String({ maxLength: 1024 }));
const KeyForm = Type.Object({ csrf: Text, name: Text, requests_per_minute: Text, tokens_per_day: Text, usd_per_month: Text });
const KeyId = Type.Object({ id: Type.String({ maxLength: 64 }) });
const NOTICES = {
  'limits-saved': 'Limits saved. The key’s next request is checked against them.',
  renamed: 'Key renamed. Programs using it are not affected: the key itself has not changed.',
  revoked: 'Key revoked. It is refused from its next request on.',
} as const;
const Query = Type.Object({ notice: Type.Optional(Type.Union(Object.keys(NOTICES).map((k) => Type.Literal(k)))) });

interface PageState {
  notice?: string | undefined;
  /** The key just created: shown once, here only. */
  created?: { name: string; key: string } | undefined;
  create?: { values: Record<string, string>; errors: Record<string, string> } | undefined;
  /** A limits form that failed, by key id. */
  limits?: { id: string; values: Record<string, string>; errors: Record<string, string> } | undefined;
  /** A rename form that failed, by key id. */
  rename?: { id: string; values: Record<string, string>; errors: Record<string, string> } | undefined;
  /** A refusal that belongs to no form on the page (a key that is not, or no longer, the workspace's). */
  error?: string | undefined;
}

/**
 * API keys: create (the key shown once, with a copy button), rename, per-key
 * limits with their current use, revoke. Every change goes through the domain
 * functions of the control-plane API (api-keys.ts), keyed by the session's
 * tenant; another workspace's key id is a 404 there, as it is for the API.
 */
export async function apiKeyPages(app: App, ctx: ConsoleContext): Promise<void> {
  const { deps } = ctx;

  async function render(request: FastifyRequest, reply: FastifyReply, status: number, state: PageState): Promise<FastifyReply> {
    const { tenantId, binding } = ctx.session(request);
    const csrf = ctx.csrf.tokenFor(binding);
    const [keys, report] = await Promise.all([listApiKeys(deps, tenantId), limitsReport(deps, tenantId)]);
    const usage = new Map(report.api_keys.map((k) => [k.id, k.usage]));
    const createValues = state.create?.values ?? {};
    const createErrors = state.create?.errors ?? {};
    const body = `<h1>API keys</h1>
      ${state.notice ? `<p class="notice" role="status">${escapeHtml(state.notice)}</p>` : ''}
      ${state.error ? `<p class="form-error" role="alert">${escapeHtml(state.error)}</p>` : ''}
      ${state.created ? createdPanel(state.created) : ''}
      <section aria-labelledby="keys-title">
        <h2 id="keys-title">Live keys</h2>
        ${keys.length === 0 ? '<p class="muted">No live keys. Create one below.</p>' : `<ul class="cards">${keys.map((k) => keyCard(k, usage.get(k.id) ?? {}, csrf, state.limits?.id === k.id ? state.limits : undefined, state.rename?.id === k.id ? state.rename : undefined)).join('')}</ul>`}
      </section>
      <section aria-labelledby="create-title" class="panel">
        <h2 id="create-title">Create a key</h2>
        <form method="post" action="/api-keys" class="stack" novalidate>
          ${csrfField(csrf)}
          ${formError(createErrors)}
          ${field({ id: 'create-name', name: 'name', label: 'Name', value: createValues['name'] ?? '', required: true, maxlength: KEY_NAME_MAX, autocomplete: 'off', hint: 'What uses the key, e.g. "CI" or "Ada’s laptop".', error: createErrors['name'] })}
          <fieldset><legend>Limits of this key (optional)</legend>${limitFields('create', {}, state.create?.values, createErrors)}</fieldset>
          <button type="submit">Create key</button>
        </form>
      </section>`;
    return sendConsolePage(reply, status, renderPage(await ctx.signedInFrame(request, 'API keys', 'api-keys'), body));
  }

  app.get('/api-keys', { schema: { hide: true, querystring: Query } }, async (request, reply) =>
    render(request, reply, 200, { notice: request.query.notice ? NOTICES[request.query.notice as keyof typeof NOTICES] : undefined }),
  );

  app.post('/api-keys', { schema: { hide: true, body: KeyForm } }, async (request, reply) => {
    const values = { name: formText(request.body, 'name'), ...postedLimitValues(request.body) };
    const limits = parseLimitsForm(request.body);
    if (!limits.ok) return render(request, reply, 400, { create: { values, errors: limits.errors } });
    const created = await attempt(() => createApiKey(deps, ctx.session(request).tenantId, values.name, limits.limits));
    if (!created.ok) return render(request, reply, created.status, { create: { values, errors: created.errors } });
    return render(request, reply, 201, { created: { name: created.value.name, key: created.value.key } });
  });

  app.post('/api-keys/:id/limits', { schema: { hide: true, params: KeyId, body: KeyForm } }, async (request, reply) => {
    const { id } = request.params;
    const values = postedLimitValues(request.body);
    const limits = parseLimitsForm(request.body);
    if (!limits.ok) return render(request, reply, 400, { limits: { id, values, errors: limits.errors } });
    const saved = await attempt(() => setApiKeyLimits(deps, ctx.session(request).tenantId, id, limits.limits));
    if (!saved.ok) return render(request, reply, saved.status, { error: Object.values(saved.errors)[0] });
    return reply.redirect(`/api-keys?notice=limits-saved#key-${encodeURIComponent(id)}`, 303);
  });

  app.post('/api-keys/:id/rename', { schema: { hide: true, params: KeyId, body: KeyForm } }, async (request, reply) => {
    const { id } = request.params;
    const values = { name: formText(request.body, 'name') };
    const renamed = await attempt(() => renameApiKey(deps, ctx.session(request).tenantId, id, values.name));
    if (renamed.ok) return reply.redirect(`/api-keys?notice=renamed#key-${encodeURIComponent(id)}`, 303);
    // A refused name is shown on the key's form; a key that is not (or no longer) the workspace's, above the list.
    if (renamed.status === 404) return render(request, reply, 404, { error: Object.values(renamed.errors)[0] });
    return render(request, reply, renamed.status, { rename: { id, values, errors: renamed.errors } });
  });

  app.post('/api-keys/:id/revoke', { schema: { hide: true, params: KeyId } }, async (request, reply) => {
    const revoked = await attempt(() => revokeApiKey(deps, ctx.session(request).tenantId, request.params.id));
    if (!revoked.ok) return render(request, reply, revoked.status, { error: Object.values(revoked.errors)[0] });
    return reply.redirect('/api-keys?notice=revoked', 303);
  });
}

/** The new key, once: a read-only field to select, and a copy button that console.js reveals. */
function createdPanel(created: { name: string; key: string }): string {
  return `<section aria-labelledby="new-key-title" class="panel new-key">
    <h2 id="new-key-title">Your new key “${escapeHtml(created.name)}”</h2>
    <p role="status">Copy it now: this is the only time it is shown. Only its first characters are kept to tell it apart.</p>
    <div class="copy-row">
      <label for="new-key" class="sr-only">The new API key</label>
      <input id="new-key" class="secret" type="text" readonly value="${escapeHtml(created.key)}" autocomplete="off" spellcheck="false">
      <button type="button" class="copy" data-copy="new-key" data-copy-status="new-key-status" hidden>Copy</button>
    </div>
    <p id="new-key-status" class="copy-status" aria-live="polite"></p>
  </section>`;
}

function keyCard(
  key: Awaited<ReturnType<typeof listApiKeys>>[number],
  usage: Parameters<typeof limitsSummary>[1],
  csrf: string,
  failed: PageState['limits'],
  renameFailed: PageState['rename'],
): string {
  const id = escapeHtml(key.id);
  const name = escapeHtml(key.name);
  const prefix = `key-${id}`;
  const errors = failed?.errors ?? {};
  const renameErrors = renameFailed?.errors ?? {};
  return `<li class="card" id="key-${id}">
    <h3>${name}</h3>
    <dl class="facts">
      <dt>Key</dt><dd><code>${escapeHtml(key.prefix)}…</code></dd>
      <dt>Created</dt><dd>${formatTime(key.created_at)}</dd>
      <dt>Last used</dt><dd>${key.last_used_at ? formatTime(key.last_used_at) : 'never'}</dd>
    </dl>
    <h4>Limits</h4>
    ${limitsSummary(key.limits, usage)}
    <details${failed ? ' open' : ''}>
      <summary>Change the limits of ${name}</summary>
      <form method="post" action="/api-keys/${id}/limits" class="stack" novalidate>
        ${csrfField(csrf)}
        ${formError(errors)}
        ${limitFields(prefix, key.limits, failed?.values, errors)}
        <button type="submit">Save limits</button>
      </form>
    </details>
    <details${renameFailed ? ' open' : ''}>
      <summary>Rename ${name}</summary>
      <form method="post" action="/api-keys/${id}/rename" class="stack" novalidate>
        ${csrfField(csrf)}
        ${formError(renameErrors)}
        ${field({ id: `${prefix}-name`, name: 'name', label: `New name for ${key.name}`, value: renameFailed?.values['name'] ?? key.name, required: true, maxlength: KEY_NAME_MAX, autocomplete: 'off', hint: 'Only the name changes: programs using the key keep working.', error: renameErrors['name'] })}
        <button type="submit">Rename</button>
      </form>
    </details>
    <details>
      <summary>Revoke ${name}</summary>
      <form method="post" action="/api-keys/${id}/revoke" class="stack">
        ${csrfField(csrf)}
        <p>Programs using this key are refused from their next request on. This cannot be undone.</p>
        <button type="submit" class="danger">Revoke ${name} now</button>
      </form>
    </details>
  </li>`;
}

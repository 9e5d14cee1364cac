import type { FastifyReply, FastifyRequest } from 'fastify';
import { type TObject, Type } from 'typebox';
import { Value } from 'typebox/value';
import { escapeHtml } from '../../../platform/html.ts';
import type { App } from '../../../platform/http.ts';
import { limitsReport } from '../../budgets/consumption.ts';
import { TenantSettingsPatch } from '../../control-plane/tenant-settings.ts';
import { getTenant, type Tenant, updateTenant } from '../../control-plane/tenants.ts';
import type { ConsoleContext } from '../console.ts';
import { attempt, csrfField, field, formError, formText } from '../forms.ts';
import { renderPage, sendConsolePage } from '../layout.ts';
import { limitFields, limitsSummary, parseLimitsForm, postedLimitValues } from '../limits-form.ts';
import { ALIAS_NOTICES, ALIASES, type AliasFailure, aliasesSection, aliasRoutes } from './settings-aliases.ts';
import { checkboxField, type FieldErrors } from './settings-fields.ts';
import { gatewayDefaults, SECTIONS, type SectionForm } from './settings-sections.ts';

/** PATCH /api/v1/tenant's bound on `name` (control-plane/routes/usage.ts); updateTenant trims it and refuses it empty. */
const WORKSPACE_NAME_MAX = 100;
const DAY_MS = 86_400_000;

/** Every form of the page: bounded strings, each checked by its section's parser and schema. */
const formSchema = (fields: readonly { name: string; maxLength: number }[]): TObject =>
  Type.Object(Object.fromEntries([{ name: 'csrf', maxLength: 128 }, ...fields].map((f) => [f.name, Type.Optional(Type.String({ maxLength: f.maxLength }))])));
const WorkspaceForm = formSchema([{ name: 'name', maxLength: 1024 }]);
const BodiesForm = formSchema([{ name: 'store_bodies', maxLength: 8 }]);
const LimitsForm = formSchema(['requests_per_minute', 'tokens_per_day', 'usd_per_month'].map((name) => ({ name, maxLength: 1024 })));
const ResetForm = formSchema([]);

const LIMITS = { slug: 'limits', title: 'Budgets' } as const;
const NOTICES: Record<string, string> = {
  'workspace-saved': 'Workspace name saved.',
  'bodies-on': 'Request bodies are kept from the next call on.',
  'bodies-off': 'Request bodies are no longer kept from the next call on.',
  ...ALIAS_NOTICES,
  ...Object.fromEntries(
    [...SECTIONS, LIMITS].flatMap((s) => [
      [`${s.slug}-saved`, `${s.title} saved. Calls use it from their next request on.`],
      [`${s.slug}-reset`, `${s.title} reset to the gateway’s defaults.`],
    ]),
  ),
};
const Query = Type.Object({ notice: Type.Optional(Type.Union(Object.keys(NOTICES).map((k) => Type.Literal(k)))) });

interface PageState {
  notice?: string | undefined;
  /** A form that failed (its slug: `workspace`, a section's, `limits`), with what was typed and why it was refused. */
  failed?: { form: string; values: Record<string, string>; errors: FieldErrors } | undefined;
  /** A failed form of the model aliases (one of its rows, or the add form). */
  alias?: AliasFailure | undefined;
}

/**
 * Settings: the workspace's name, whether request bodies are kept, the
 * model aliases (settings-aliases.ts), and each pipeline settings section
 * (routing, compaction, response cache, provider prompt caching, budgets), one form each with a reset to the gateway's
 * defaults. Every change goes through updateTenant, as PATCH
 * /api/v1/tenant does, with what the forms parsed checked against the same
 * TypeBox schemas; a refusal is shown next to its field (400), with what
 * was typed. An unset field shows the gateway's effective default.
 */
export async function settingsPage(app: App, ctx: ConsoleContext): Promise<void> {
  const { deps } = ctx;
  const defaults = gatewayDefaults(deps.config);

  async function render(request: FastifyRequest, reply: FastifyReply, status: number, state: PageState): Promise<FastifyReply> {
    const { tenantId, binding } = ctx.session(request);
    const csrf = ctx.csrf.tokenFor(binding);
    const [tenant, report] = await Promise.all([getTenant(deps, tenantId), limitsReport(deps, tenantId)]);
    const failedOf = (form: string) => (state.failed?.form === form ? state.failed : undefined);
    const toc = [['workspace', 'Workspace'], [ALIASES.slug, ALIASES.title], ...SECTIONS.map((s) => [s.slug, s.title]), [LIMITS.slug, LIMITS.title], ['bodies', 'Request bodies']]
      .map(([id, title]) => `<li><a href="#${id}">${escapeHtml(title!)}</a></li>`)
      .join('');
    const body = `<h1>Settings</h1>
      ${state.notice ? `<p class="notice" role="status">${escapeHtml(state.notice)}</p>` : ''}
      <p>Each section is saved on its own. A field left empty (or on “Gateway default”) takes the gateway’s default, named beside it; the same settings are under <code>settings</code> in <code>GET /api/v1/tenant</code>.</p>
      <nav aria-label="Settings sections" class="toc"><ul>${toc}</ul></nav>
      ${workspaceSection(tenant, csrf, failedOf('workspace'))}
      ${aliasesSection(tenant, csrf, state.alias)}
      ${SECTIONS.map((s) => pipelineSection(s, tenant, csrf, failedOf(s.slug))).join('')}
      ${limitsSection(tenant, report.tenant.usage, csrf, failedOf(LIMITS.slug))}
      ${bodiesSection(tenant, csrf, Math.round(deps.config.usage.retentionMs / DAY_MS), deps.config.storedBodies)}`;
    return sendConsolePage(reply, status, renderPage(await ctx.signedInFrame(request, 'Settings', 'settings'), body));
  }

  function pipelineSection(s: SectionForm, tenant: Tenant, csrf: string, failed: PageState['failed']): string {
    const errors = failed?.errors ?? {};
    return `<section id="${s.slug}" aria-labelledby="${s.slug}-title" class="panel">
      <h2 id="${s.slug}-title">${escapeHtml(s.title)}</h2>
      <p>${s.intro}</p>
      <form method="post" action="/settings/${s.slug}" class="stack" novalidate>
        ${csrfField(csrf)}
        ${formError(errors)}
        ${s.render(failed?.values ?? s.values(tenant.settings), errors, defaults)}
        <button type="submit">Save ${escapeHtml(s.title.toLowerCase())}</button>
      </form>
      ${resetForm(s.slug, s.title, csrf)}
    </section>`;
  }

  /** A failed post: the page again with its values and errors (400, or the domain's status). */
  const refused = (request: FastifyRequest, reply: FastifyReply, status: number, form: string, values: Record<string, string>, errors: FieldErrors) =>
    render(request, reply, status, { failed: { form, values, errors } });
  const saved = (reply: FastifyReply, notice: string, anchor: string) => reply.redirect(`/settings?notice=${notice}#${anchor}`, 303);

  aliasRoutes(app, ctx, (request, reply, status, alias) => render(request, reply, status, { alias }));

  app.get('/settings', { schema: { hide: true, querystring: Query } }, async (request, reply) =>
    render(request, reply, 200, { notice: request.query.notice ? NOTICES[request.query.notice] : undefined }),
  );

  app.post('/settings/workspace', { schema: { hide: true, body: WorkspaceForm } }, async (request, reply) => {
    const values = { name: formText(request.body, 'name') };
    if (values.name.trim().length > WORKSPACE_NAME_MAX) {
      return refused(request, reply, 400, 'workspace', values, { name: `The workspace name must be at most ${WORKSPACE_NAME_MAX} characters.` });
    }
    const done = await attempt(() => updateTenant(deps, ctx.session(request).tenantId, { name: values.name }));
    if (!done.ok) return refused(request, reply, done.status, 'workspace', values, done.errors);
    return saved(reply, 'workspace-saved', 'workspace');
  });

  app.post('/settings/bodies', { schema: { hide: true, body: BodiesForm } }, async (request, reply) => {
    const on = formText(request.body, 'store_bodies') === 'on';
    await updateTenant(deps, ctx.session(request).tenantId, { storeBodies: on });
    return saved(reply, on ? 'bodies-on' : 'bodies-off', 'bodies');
  });

  /** Stores one section (null: back to every default), through the API's schema and updateTenant. */
  async function store(request: FastifyRequest, reply: FastifyReply, form: string, patch: TenantSettingsPatch, values: Record<string, string>) {
    if (!Value.Check(TenantSettingsPatch, patch)) return refused(request, reply, 400, form, values, { '': 'These settings are not valid.' });
    const done = await attempt(() => updateTenant(deps, ctx.session(request).tenantId, { settings: patch }));
    if (!done.ok) return refused(request, reply, done.status, form, values, done.errors);
    return undefined;
  }

  for (const s of SECTIONS) {
    app.post(`/settings/${s.slug}`, { schema: { hide: true, body: formSchema(s.fields) } }, async (request, reply) => {
      const values = Object.fromEntries(s.fields.map((f) => [f.name, formText(request.body, f.name)]));
      const parsed = s.parse(request.body);
      if (!parsed.ok) return refused(request, reply, 400, s.slug, values, parsed.errors);
      const section = Object.keys(parsed.section).length === 0 ? null : parsed.section;
      return (await store(request, reply, s.slug, { [s.key]: section } as TenantSettingsPatch, values)) ?? saved(reply, `${s.slug}-saved`, s.slug);
    });
  }

  app.post('/settings/limits', { schema: { hide: true, body: LimitsForm } }, async (request, reply) => {
    const values = postedLimitValues(request.body);
    const parsed = parseLimitsForm(request.body);
    if (!parsed.ok) return refused(request, reply, 400, LIMITS.slug, values, parsed.errors);
    const limits = Object.keys(parsed.limits).length === 0 ? null : parsed.limits;
    return (await store(request, reply, LIMITS.slug, { limits }, values)) ?? saved(reply, 'limits-saved', LIMITS.slug);
  });

  for (const { slug, key } of [...SECTIONS, { slug: LIMITS.slug, key: 'limits' as const }]) {
    app.post(`/settings/${slug}/reset`, { schema: { hide: true, body: ResetForm } }, async (request, reply) => {
      await updateTenant(deps, ctx.session(request).tenantId, { settings: { [key]: null } });
      return saved(reply, `${slug}-reset`, slug);
    });
  }
}

function workspaceSection(tenant: Tenant, csrf: string, failed: PageState['failed']): string {
  const errors = failed?.errors ?? {};
  return `<section id="workspace" aria-labelledby="workspace-title" class="panel">
    <h2 id="workspace-title">Workspace</h2>
    <form method="post" action="/settings/workspace" class="stack" novalidate>
      ${csrfField(csrf)}
      ${formError(errors)}
      ${field({ id: 'workspace-name', name: 'name', label: 'Workspace name', value: failed?.values['name'] ?? tenant.name, required: true, maxlength: WORKSPACE_NAME_MAX, autocomplete: 'organization', hint: 'Shown at the top of every page of this console.', error: errors['name'] })}
      <button type="submit">Save name</button>
    </form>
  </section>`;
}

function limitsSection(tenant: Tenant, usage: Parameters<typeof limitsSummary>[1], csrf: string, failed: PageState['failed']): string {
  const limits = tenant.settings.limits ?? {};
  const errors = failed?.errors ?? {};
  const set = Object.keys(limits).length > 0;
  return `<section id="${LIMITS.slug}" aria-labelledby="${LIMITS.slug}-title" class="panel">
    <h2 id="${LIMITS.slug}-title">${LIMITS.title}</h2>
    <p>Limits on all of the workspace’s calls together, whichever key sends them; each API key can have limits of its own on the <a href="/api-keys">API keys</a> page, and a call must fit both. A call over a limit is refused with 429 before the provider is called. Windows are the UTC calendar minute, day and month.</p>
    <h3>Now</h3>
    ${set ? limitsSummary(limits, usage) : '<p class="muted">No workspace limits: calls are limited only by their key’s own limits, if it has any.</p>'}
    <form method="post" action="/settings/${LIMITS.slug}" class="stack" novalidate>
      ${csrfField(csrf)}
      ${formError(errors)}
      <fieldset><legend>Workspace limits</legend>${limitFields(LIMITS.slug, limits, failed?.values, errors)}</fieldset>
      <button type="submit">Save budgets</button>
    </form>
    ${resetForm(LIMITS.slug, LIMITS.title, csrf, 'Every workspace limit is removed (the gateway sets none); the keys’ own limits stay.')}
  </section>`;
}

function bodiesSection(tenant: Tenant, csrf: string, retentionDays: number, limits: { maxBytes: number; quotaBytes: number }): string {
  const days = `${retentionDays} day${retentionDays === 1 ? '' : 's'}`;
  const mib = (bytes: number) => `${Number((bytes / 1024 / 1024).toFixed(2))} MiB`;
  return `<section id="bodies" aria-labelledby="bodies-title" class="panel">
    <h2 id="bodies-title">Request bodies</h2>
    <p>Off by default: the request log keeps each call’s figures (model, tokens, cost, timing, status), never what was said.</p>
    <form method="post" action="/settings/bodies" class="stack">
      ${csrfField(csrf)}
      ${checkboxField({
        id: 'store-bodies',
        name: 'store_bodies',
        label: 'Keep prompt and completion bodies in the request log',
        checked: tenant.store_bodies,
        hint: `On: from the next call, each call’s request (as sent to the provider, after compaction) and its answer (a stream as its events) are kept with the call’s record, where anyone signed in to this workspace can read them (the request log, GET /api/v1/tenant/requests/{id}). They are stored as they are, not encrypted, in the gateway’s database, and deleted with the record after ${days} (GATEWAY_USAGE_RETENTION_DAYS on this gateway). Only calls that reached a provider keep them; each body is kept up to ${mib(limits.maxBytes)} (the rest cut, the call marked truncated), and this workspace keeps at most ${mib(limits.quotaBytes)} of bodies: past that, calls keep none until older ones are deleted. Turning it off keeps no more bodies; those already kept stay until their ${days} are over.`,
      })}
      <button type="submit">Save</button>
    </form>
  </section>`;
}

function resetForm(slug: string, title: string, csrf: string, what = 'Every field of this section goes back to the gateway’s default.'): string {
  return `<details>
    <summary>Reset ${escapeHtml(title.toLowerCase())} to the gateway’s defaults</summary>
    <form method="post" action="/settings/${slug}/reset" class="stack">
      ${csrfField(csrf)}
      <p>${escapeHtml(what)}</p>
      <button type="submit" class="secondary">Reset ${escapeHtml(title.toLowerCase())} now</button>
    </form>
  </details>`;
}

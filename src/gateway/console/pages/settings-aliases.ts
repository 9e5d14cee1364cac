import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { Value } from 'typebox/value';
import { escapeHtml } from '../../../platform/html.ts';
import type { App } from '../../../platform/http.ts';
import { PROVIDERS } from '../../providers/registry.ts';
import { MAX_ALIASES, ModelsSettings } from '../../settings/models.ts';
import { getTenant, type Tenant, updateTenant } from '../../control-plane/tenants.ts';
import type { ConsoleContext } from '../console.ts';
import { attempt, csrfField, field, formError, formText } from '../forms.ts';
import type { FieldErrors } from './settings-fields.ts';

/**
 * The Settings page's "Model aliases" section: one row per alias, each its
 * own small form (edit its name or model, or remove it), and a form to add
 * one, so that a hundred aliases never make a form of hundreds of fields.
 * Every change reads the stored aliases, changes one, and stores them
 * through updateTenant, checked against the API's schema (settings/models.ts).
 */

export const ALIASES = { slug: 'model-aliases', title: 'Model aliases' } as const;

export const ALIAS_NOTICES: Record<string, string> = {
  'model-aliases-added': 'Alias added. Calls use it from their next request on.',
  'model-aliases-saved': 'Alias saved. Calls use it from their next request on.',
  'model-aliases-removed': 'Alias removed.',
  'model-aliases-reset': 'Every model alias removed.',
};

/** A failed post: which row (`''`: the add form), what was typed, and why it was refused. */
export interface AliasFailure {
  row: string;
  values: { name: string; target: string };
  errors: FieldErrors;
}

const NAME_MAX = 256;
const Row = Type.Object({
  csrf: Type.Optional(Type.String({ maxLength: 128 })),
  original: Type.Optional(Type.String({ maxLength: NAME_MAX })),
  name: Type.Optional(Type.String({ maxLength: 1024 })),
  target: Type.Optional(Type.String({ maxLength: 1024 })),
});
const Reset = Type.Object({ csrf: Type.Optional(Type.String({ maxLength: 128 })) });

const NAME_RULE = `A model name as clients send it (up to ${NAME_MAX} characters, no spaces), or a prefix ending in * such as claude-*; not auto.`;
const TARGET_RULE = `provider/model with a provider of this gateway (${PROVIDERS.map((p) => p.id).join(', ')}), or auto`;

/** The section's HTML: the rows, the add form and the reset. */
export function aliasesSection(tenant: Tenant, csrf: string, failed: AliasFailure | undefined): string {
  const aliases = Object.entries(tenant.settings.models?.aliases ?? {});
  const rows = aliases.map(([name, target], i) => {
    const mine = failed?.row === name ? failed : undefined;
    return `<li class="card"><form method="post" action="/settings/${ALIASES.slug}/edit" novalidate>
      ${csrfField(csrf)}
      <input type="hidden" name="original" value="${escapeHtml(name)}">
      ${formError(mine?.errors ?? {})}
      <div class="filter-grid">
        ${field({ id: `alias-${i}-name`, name: 'name', label: 'Name', value: mine?.values.name ?? name, error: mine?.errors['name'], maxlength: NAME_MAX, autocomplete: 'off' })}
        ${field({ id: `alias-${i}-target`, name: 'target', label: 'Model', value: mine?.values.target ?? target, error: mine?.errors['target'], maxlength: 256, autocomplete: 'off' })}
      </div>
      <div class="form-actions">
        <button type="submit">Save ${escapeHtml(name)}</button>
        <button type="submit" class="secondary" formaction="/settings/${ALIASES.slug}/remove">Remove ${escapeHtml(name)}</button>
      </div>
    </form></li>`;
  });
  const adding = failed?.row === '' ? failed : undefined;
  return `<section id="${ALIASES.slug}" aria-labelledby="${ALIASES.slug}-title" class="panel">
    <h2 id="${ALIASES.slug}-title">${ALIASES.title}</h2>
    <p>Call another model than the one a client names, without changing the client: an alias maps a model name, or every name starting with a prefix (<code>claude-*</code>), to a model of any of your providers, or to <code>auto</code>. An exact name beats a prefix, the longest prefix wins; the gateway then treats the alias’s model as if the client had named it (its fallbacks, routing). The request log keeps the name the client sent beside the model that answered, and X-Gateway-Route-Reason says which alias applied. Claude Code, for instance, names <code>claude-haiku-4-5</code> for its small background tasks.</p>
    ${rows.length === 0 ? '<p class="muted">No aliases: every model name is called as named.</p>' : `<ul class="cards">${rows.join('')}</ul>`}
    <h3>Add an alias</h3>
    <form method="post" action="/settings/${ALIASES.slug}/add" class="stack" novalidate>
      ${csrfField(csrf)}
      ${formError(adding?.errors ?? {})}
      ${field({ id: 'alias-new-name', name: 'name', label: 'Name', value: adding?.values.name ?? '', error: adding?.errors['name'], maxlength: NAME_MAX, autocomplete: 'off', hint: NAME_RULE })}
      ${field({ id: 'alias-new-target', name: 'target', label: 'Model', value: adding?.values.target ?? '', error: adding?.errors['target'], maxlength: 256, autocomplete: 'off', hint: `The model called instead: ${TARGET_RULE}, e.g. openai/gpt-5-mini. At most ${MAX_ALIASES} aliases.` })}
      <button type="submit">Add alias</button>
    </form>
    <details>
      <summary>Remove every model alias</summary>
      <form method="post" action="/settings/${ALIASES.slug}/reset" class="stack">
        ${csrfField(csrf)}
        <p>Every model name is then called as named.</p>
        <button type="submit" class="secondary">Remove every alias now</button>
      </form>
    </details>
  </section>`;
}

/** The aliases with one change checked against the API's schema: the refusals as the row's field errors. */
function checked(aliases: Record<string, string>, name: string): FieldErrors {
  // Never a key of a plain object: assigning it sets the prototype (the API's JSON parser refuses it too).
  if (name === '__proto__') return { name: NAME_RULE };
  const errors: FieldErrors = {};
  for (const e of Value.Errors(ModelsSettings, { aliases })) {
    if (e.keyword === 'maxProperties') errors[''] ??= `At most ${MAX_ALIASES} aliases: remove one first.`;
    else if (e.instancePath === '/aliases' || e.instancePath === '/aliases/') errors['name'] ??= NAME_RULE;
    else if (e.instancePath === `/aliases/${name.replaceAll('~', '~0').replaceAll('/', '~1')}`) errors['target'] ??= `"${aliases[name]}" is not a model written as ${TARGET_RULE}.`;
  }
  return errors;
}

/** The section's routes; `refused` shows the page again with a row's values and errors. */
export function aliasRoutes(
  app: App,
  ctx: ConsoleContext,
  refused: (request: FastifyRequest, reply: FastifyReply, status: number, failure: AliasFailure) => Promise<FastifyReply>,
): void {
  const { deps } = ctx;
  const done = (reply: FastifyReply, notice: keyof typeof ALIAS_NOTICES) => reply.redirect(`/settings?notice=${notice}#${ALIASES.slug}`, 303);

  /** Reads the stored aliases, applies `change`, stores the result (none left: the section reset). */
  async function change(request: FastifyRequest, reply: FastifyReply, notice: string, edit: (aliases: Record<string, string>) => AliasFailure | undefined) {
    const tenantId = ctx.session(request).tenantId;
    const aliases = { ...((await getTenant(deps, tenantId)).settings.models?.aliases ?? {}) };
    const failure = edit(aliases);
    if (failure) return refused(request, reply, 400, failure);
    const models = Object.keys(aliases).length === 0 ? null : { aliases };
    const stored = await attempt(() => updateTenant(deps, tenantId, { settings: { models } }));
    if (!stored.ok) return refused(request, reply, stored.status, { row: formText(request.body, 'original'), values: typed(request), errors: stored.errors });
    return done(reply, notice);
  }
  const typed = (request: FastifyRequest) => ({ name: formText(request.body, 'name').trim(), target: formText(request.body, 'target').trim() });

  app.post(`/settings/${ALIASES.slug}/add`, { schema: { hide: true, body: Row } }, async (request, reply) =>
    change(request, reply, 'model-aliases-added', (aliases) => {
      const values = typed(request);
      if (Object.hasOwn(aliases, values.name)) return { row: '', values, errors: { name: `${values.name} has an alias already: change it in its row.` } };
      aliases[values.name] = values.target;
      const errors = checked(aliases, values.name);
      return Object.keys(errors).length > 0 ? { row: '', values, errors } : undefined;
    }),
  );

  app.post(`/settings/${ALIASES.slug}/edit`, { schema: { hide: true, body: Row } }, async (request, reply) =>
    change(request, reply, 'model-aliases-saved', (aliases) => {
      const original = formText(request.body, 'original');
      const values = typed(request);
      if (!Object.hasOwn(aliases, original)) return { row: '', values, errors: { '': `There is no alias ${original} any more; add it again.` } };
      if (values.name !== original && Object.hasOwn(aliases, values.name)) return { row: original, values, errors: { name: `${values.name} has an alias already, in another row.` } };
      // Rebuilt in order, so that the edited row keeps its place on the page.
      const rebuilt = Object.fromEntries(Object.entries(aliases).map(([name, target]) => (name === original ? [values.name, values.target] : [name, target])));
      const errors = checked(rebuilt, values.name);
      if (Object.keys(errors).length > 0) return { row: original, values, errors };
      for (const name of Object.keys(aliases)) delete aliases[name];
      Object.assign(aliases, rebuilt);
      return undefined;
    }),
  );

  app.post(`/settings/${ALIASES.slug}/remove`, { schema: { hide: true, body: Row } }, async (request, reply) =>
    change(request, reply, 'model-aliases-removed', (aliases) => {
      delete aliases[formText(request.body, 'original')];
      return undefined;
    }),
  );

  app.post(`/settings/${ALIASES.slug}/reset`, { schema: { hide: true, body: Reset } }, async (request, reply) => {
    await updateTenant(deps, ctx.session(request).tenantId, { settings: { models: null } });
    return done(reply, 'model-aliases-reset');
  });
}

import type { TSchema } from 'typebox';
import { Value } from 'typebox/value';
import { escapeHtml } from '../../../platform/html.ts';
import { PROVIDERS } from '../../providers/registry.ts';
import { fieldError, formText } from '../forms.ts';

/**
 * The pieces the Settings page's forms are made of: inputs the console's
 * forms.ts does not have (a select with the gateway's default as its first
 * choice, a textarea, a checkbox), the parsing of each kind of value, and
 * the mapping of a TypeBox refusal back to the form field it concerns. The
 * schemas themselves (settings/*.ts) decide what is valid, as for the API.
 */

export type FieldErrors = Record<string, string>;

/** What a schema says of a number or a list (TypeBox schemas are JSON Schema objects). */
interface Bounds {
  minimum?: number;
  maximum?: number;
  maxItems?: number;
  maxProperties?: number;
}
export const boundsOf = (schema: unknown): Bounds => schema as Bounds;

const described = (id: string, hint: string | undefined, error: string | undefined) => {
  const ids = [hint ? `${id}-hint` : '', error ? `${id}-error` : ''].filter(Boolean).join(' ');
  return (ids ? ` aria-describedby="${ids}"` : '') + (error ? ' aria-invalid="true" autofocus' : '');
};
const hintLine = (id: string, hint: string | undefined) => (hint ? `<p class="hint" id="${id}-hint">${escapeHtml(hint)}</p>` : '');

export interface ChoiceSpec {
  id: string;
  name: string;
  label: string;
  hint?: string | undefined;
  options: readonly { value: string; label: string }[];
  value: string;
  error?: string | undefined;
}

/** A labelled select; a value that is no option (a failed post's) selects nothing, and the browser shows the first. */
export function choiceField(spec: ChoiceSpec): string {
  const options = spec.options
    .map((o) => `<option value="${escapeHtml(o.value)}"${o.value === spec.value ? ' selected' : ''}>${escapeHtml(o.label)}</option>`)
    .join('');
  return (
    `<div class="field${spec.error ? ' invalid' : ''}">` +
    `<label for="${spec.id}">${escapeHtml(spec.label)}</label>${hintLine(spec.id, spec.hint)}` +
    `<select id="${spec.id}" name="${spec.name}"${described(spec.id, spec.hint, spec.error)}>${options}</select>` +
    `${fieldError(spec.id, spec.error)}</div>`
  );
}

/** An optional on/off setting: the gateway's default (saying what it is), on, or off. */
export function switchField(spec: Omit<ChoiceSpec, 'options'> & { defaultOn: boolean; defaultNote?: string }): string {
  const note = spec.defaultNote ?? (spec.defaultOn ? 'on' : 'off');
  return choiceField({
    ...spec,
    options: [
      { value: '', label: `Gateway default (${note})` },
      { value: 'true', label: 'On' },
      { value: 'false', label: 'Off' },
    ],
  });
}

/** A labelled textarea (lists of models, fallback chains). */
export function textareaField(spec: { id: string; name: string; label: string; hint?: string; value: string; error?: string | undefined; rows?: number }): string {
  return (
    `<div class="field${spec.error ? ' invalid' : ''}">` +
    `<label for="${spec.id}">${escapeHtml(spec.label)}</label>${hintLine(spec.id, spec.hint)}` +
    `<textarea id="${spec.id}" name="${spec.name}" rows="${spec.rows ?? 3}" spellcheck="false" autocomplete="off"${described(spec.id, spec.hint, spec.error)}>${escapeHtml(spec.value)}</textarea>` +
    `${fieldError(spec.id, spec.error)}</div>`
  );
}

/** A checkbox with its label beside it and its explanation under it. */
export function checkboxField(spec: { id: string; name: string; label: string; hint: string; checked: boolean }): string {
  return (
    `<div class="field check-field"><input type="checkbox" id="${spec.id}" name="${spec.name}" value="on"${spec.checked ? ' checked' : ''} aria-describedby="${spec.id}-hint">` +
    `<label for="${spec.id}">${escapeHtml(spec.label)}</label>${hintLine(spec.id, spec.hint)}</div>`
  );
}

// Parsing: '' is "not set" (the gateway's default) for every kind.

export type Parsed<T> = { ok: true; value: T | undefined } | { ok: false; error: string };

export function parseSwitch(body: unknown, name: string, label: string): Parsed<boolean> {
  const raw = formText(body, name);
  if (raw === '') return { ok: true, value: undefined };
  if (raw === 'true' || raw === 'false') return { ok: true, value: raw === 'true' };
  return { ok: false, error: `${label}: choose the gateway's default, On or Off.` };
}

/** "a whole number from 1 to 2,592,000", from the schema's bounds. */
export function wholeRange(schema: unknown): string {
  const { minimum, maximum } = boundsOf(schema);
  return `a whole number from ${(minimum ?? 0).toLocaleString('en-US')} to ${(maximum ?? Number.MAX_SAFE_INTEGER).toLocaleString('en-US')}`;
}

/** A whole number the schema accepts (thousands separators allowed), or empty. */
export function parseWhole(body: unknown, name: string, label: string, schema: TSchema): Parsed<number> {
  const raw = formText(body, name).trim().replaceAll(',', '');
  if (raw === '') return { ok: true, value: undefined };
  const value = Number(raw);
  if (!/^\d{1,16}$/.test(raw) || !Value.Check(schema, value)) return { ok: false, error: `${label} must be ${wholeRange(schema)}, or empty for the gateway's default.` };
  return { ok: true, value };
}

/** Models written one per line (or separated by spaces or commas); empty: not set. */
export function parseModelList(body: unknown, name: string): string[] | undefined {
  const items = formText(body, name)
    .split(/[\s,]+/)
    .filter((s) => s !== '');
  return items.length === 0 ? undefined : items;
}

/** Fallback chains as lines `model: fallback, fallback` (the model may itself hold a colon, as `llama3.1:8b` does). */
export function parseChains(body: unknown, name: string): Parsed<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  const lines = formText(body, name)
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '');
  for (const [i, line] of lines.entries()) {
    const colon = line.search(/:(?=\s|$)/);
    const model = colon < 0 ? '' : line.slice(0, colon).trim();
    if (model === '') return { ok: false, error: `Line ${i + 1}: write the model, a colon, then its fallbacks, e.g. "openai/gpt-4o: anthropic/claude-sonnet-4-5, openai/gpt-4.1".` };
    if (Object.hasOwn(out, model)) return { ok: false, error: `Line ${i + 1}: ${model} has a chain already, on an earlier line.` };
    out[model] = line
      .slice(colon + 1)
      .split(/[\s,]+/)
      .filter((s) => s !== '');
  }
  return { ok: true, value: lines.length === 0 ? undefined : out };
}

export const chainsText = (chains: Record<string, string[]> | undefined): string =>
  Object.entries(chains ?? {})
    .map(([model, chain]) => `${model}:${chain.length === 0 ? '' : ` ${chain.join(', ')}`}`)
    .join('\n');

const MODEL_FORMAT = `provider/model with a provider of this gateway (${PROVIDERS.map((p) => p.id).join(', ')})`;

/**
 * The first refusal of `schema` for `section`, as field errors: each
 * TypeBox error's path names the form field (`fieldOf`) and its kind the
 * sentence. What the form parsers already checked never reaches here;
 * this is where the schema's own rules (model names, list lengths) speak.
 */
export function schemaErrors(schema: TSchema, section: unknown, fieldOf: (path: string[]) => { name: string; label: string }): FieldErrors {
  const errors: FieldErrors = {};
  for (const e of Value.Errors(schema, section)) {
    if (e.keyword === 'boolean') continue; // repeated as the parent's additionalProperties error
    const path = e.instancePath.split('/').slice(1).map((p) => p.replaceAll('~1', '/').replaceAll('~0', '~'));
    const { name, label } = fieldOf(path);
    if (errors[name]) continue;
    const value = pathValue(section, path);
    const limit = (e.params as { limit?: number }).limit;
    const chain = path[0] === 'fallbacks' && path.length >= 2 ? `In the chain of ${path[1]}: ` : '';
    if (e.keyword === 'pattern' && typeof value === 'string') errors[name] = `${chain}"${value}" is not a model written as ${MODEL_FORMAT}.`;
    else if (e.keyword === 'maxItems') errors[name] = `${chain || `${label}: `}at most ${limit} models.`;
    else if (e.keyword === 'maxProperties') errors[name] = `${label}: at most ${limit} chains.`;
    else errors[name] = `${label}: ${e.message}.`;
  }
  return errors;
}

function pathValue(root: unknown, path: string[]): unknown {
  let at: unknown = root;
  for (const p of path) at = typeof at === 'object' && at !== null ? (at as Record<string, unknown>)[p] : undefined;
  return at;
}

/** "3,600 seconds (1 hour)". */
export function seconds(n: number): string {
  const unit = (size: number, word: string) => (n % size === 0 && n >= size ? ` (${n / size} ${word}${n / size === 1 ? '' : 's'})` : '');
  return `${n.toLocaleString('en-US')} seconds${unit(86_400, 'day') || unit(3600, 'hour') || unit(60, 'minute')}`;
}

/** "1,048,576 bytes (1 MiB)". */
export function bytes(n: number): string {
  const unit = (size: number, word: string) => (n % size === 0 && n >= size ? ` (${n / size} ${word})` : '');
  return `${n.toLocaleString('en-US')} bytes${unit(1024 * 1024 * 1024, 'GiB') || unit(1024 * 1024, 'MiB') || unit(1024, 'KiB')}`;
}

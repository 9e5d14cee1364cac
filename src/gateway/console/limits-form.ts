import { Value } from 'typebox/value';
import type { LimitUsage, LimitsUsage } from '../budgets/consumption.ts';
import { Limits } from '../settings/limits.ts';
import { field, formText } from './forms.ts';

type LimitField = keyof Limits;

/** The three limits as the forms show them; ranges and whole-or-decimal come from the Limits schema itself. */
const FIELDS: readonly { name: LimitField; label: string; period: string }[] = [
  { name: 'requests_per_minute', label: 'Requests per minute', period: 'this minute' },
  { name: 'tokens_per_day', label: 'Tokens per day', period: 'today (UTC)' },
  { name: 'usd_per_month', label: 'USD per month', period: 'this month (UTC)' },
];

interface NumberSchema {
  type: string;
  minimum: number;
  maximum: number;
}

const schemaOf = (name: LimitField) => Limits.properties[name] as unknown as NumberSchema;
const rangeText = (s: NumberSchema) =>
  `${s.type === 'integer' ? 'a whole number' : 'a number'} from ${s.minimum.toLocaleString('en-US')} to ${s.maximum.toLocaleString('en-US')}`;

/**
 * The limits a form asks for, checked against the same TypeBox schema the
 * API validates `limits` with (settings/limits.ts): an empty field is no
 * limit; anything else must be a plain decimal number the schema accepts.
 */
export function parseLimitsForm(body: unknown): { ok: true; limits: Limits } | { ok: false; errors: Record<string, string> } {
  const limits: Record<string, number> = {};
  const errors: Record<string, string> = {};
  for (const { name, label } of FIELDS) {
    const raw = formText(body, name).trim().replaceAll(',', '');
    if (raw === '') continue;
    const value = Number(raw);
    if (!/^\d+(\.\d+)?$/.test(raw) || !Value.Check(schemaOf(name), value)) errors[name] = `${label} must be ${rangeText(schemaOf(name))}, or empty for no limit.`;
    else limits[name] = value;
  }
  if (Object.keys(errors).length > 0) return { ok: false, errors };
  return Value.Check(Limits, limits) ? { ok: true, limits: limits as Limits } : { ok: false, errors: { '': 'These limits are not valid.' } };
}

/** The three inputs of a limits form (ids prefixed by `prefix`), showing `values` (a failed post's) or the stored limits. */
export function limitFields(prefix: string, current: Limits, values: Record<string, string> | undefined, errors: Record<string, string>): string {
  return FIELDS.map(({ name, label }) => {
    const s = schemaOf(name);
    return field({
      id: `${prefix}-${name}`,
      name,
      label,
      value: values ? (values[name] ?? '') : current[name] === undefined ? '' : String(current[name]),
      type: 'text',
      inputmode: s.type === 'integer' ? 'numeric' : 'decimal',
      maxlength: 24,
      autocomplete: 'off',
      hint: `Empty: no limit. Otherwise ${rangeText(s)}.`,
      error: errors[name],
    });
  }).join('');
}

/** "Requests per minute: 60 (12 used this minute)" lines, or "No limits of its own". */
export function limitsSummary(limits: Limits, usage: LimitsUsage): string {
  const lines = FIELDS.filter(({ name }) => limits[name] !== undefined).map(({ name, label, period }) => {
    const u: LimitUsage | undefined = usage[name];
    const used = u ? ` (${formatAmount(name, u.used + u.reserved)} used ${period})` : '';
    return `<li>${label}: ${formatAmount(name, limits[name]!)}${used}</li>`;
  });
  return lines.length === 0 ? '<p class="muted">No limits of its own (the workspace’s limits still apply).</p>' : `<ul class="limits">${lines.join('')}</ul>`;
}

function formatAmount(name: LimitField, n: number): string {
  return name === 'usd_per_month' ? `$${n.toFixed(2)}` : Math.round(n).toLocaleString('en-US');
}

/** The raw values of a posted limits form, to show them again with its errors. */
export function postedLimitValues(body: unknown): Record<string, string> {
  return Object.fromEntries(FIELDS.map(({ name }) => [name, formText(body, name)]));
}

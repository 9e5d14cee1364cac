import { HttpProblem } from '../../platform/errors.ts';
import { escapeHtml } from '../../platform/html.ts';

/** The hidden field every console form carries (csrf.ts). */
export function csrfField(token: string): string {
  return `<input type="hidden" name="csrf" value="${escapeHtml(token)}">`;
}

export interface FieldSpec {
  /** Unique on the page (forms repeated per item prefix it). */
  id: string;
  name: string;
  label: string;
  value?: string | undefined;
  /** Shown next to the field and announced (role=alert); the field is marked invalid and takes the focus. */
  error?: string | undefined;
  hint?: string | undefined;
  type?: 'text' | 'email' | 'password' | 'url' | 'number';
  required?: boolean;
  autocomplete?: string;
  maxlength?: number;
  inputmode?: 'numeric' | 'decimal';
  min?: number;
  max?: number;
  step?: string;
}

/** A labelled input with its hint and error tied to it (aria-describedby), as screen readers read them. */
export function field(spec: FieldSpec): string {
  const described = [spec.hint ? `${spec.id}-hint` : '', spec.error ? `${spec.id}-error` : ''].filter(Boolean).join(' ');
  const attrs = [
    `type="${spec.type ?? 'text'}"`,
    `id="${spec.id}"`,
    `name="${spec.name}"`,
    spec.value !== undefined ? `value="${escapeHtml(spec.value)}"` : '',
    spec.required ? 'required' : '',
    spec.autocomplete ? `autocomplete="${spec.autocomplete}"` : '',
    spec.maxlength !== undefined ? `maxlength="${spec.maxlength}"` : '',
    spec.inputmode ? `inputmode="${spec.inputmode}"` : '',
    spec.min !== undefined ? `min="${spec.min}"` : '',
    spec.max !== undefined ? `max="${spec.max}"` : '',
    spec.step ? `step="${spec.step}"` : '',
    described ? `aria-describedby="${described}"` : '',
    spec.error ? 'aria-invalid="true" autofocus' : '',
  ].filter(Boolean);
  return (
    `<div class="field${spec.error ? ' invalid' : ''}">` +
    `<label for="${spec.id}">${escapeHtml(spec.label)}</label>` +
    (spec.hint ? `<p class="hint" id="${spec.id}-hint">${escapeHtml(spec.hint)}</p>` : '') +
    `<input ${attrs.join(' ')}>` +
    fieldError(spec.id, spec.error) +
    '</div>'
  );
}

/** The error line of a field (also used under selects). */
export function fieldError(id: string, error: string | undefined): string {
  return error ? `<p class="field-error" id="${id}-error" role="alert">${escapeHtml(error)}</p>` : '';
}

/** A text field of a parsed form body (absent: ''); duplicates are refused by the routes' schemas before this. */
export function formText(body: unknown, name: string): string {
  const value = (body as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? value : '';
}

/** Errors by field name, from a domain function's refusal; a refusal naming no field is kept under `''` (the form as a whole). */
export function errorsOf(problem: HttpProblem): Record<string, string> {
  const out: Record<string, string> = {};
  // fieldProblem's one error repeats the whole sentence; the detail is the better text when there is one error.
  for (const e of problem.errors ?? []) out[e.field] ??= problem.errors!.length === 1 ? problem.message : e.message;
  if (Object.keys(out).length === 0) out[''] = problem.message;
  return out;
}

/** Runs a domain call; a client error (4xx) comes back as field errors to show on the form, anything else propagates. */
export async function attempt<T>(call: () => Promise<T>): Promise<{ ok: true; value: T } | { ok: false; status: number; errors: Record<string, string> }> {
  try {
    return { ok: true, value: await call() };
  } catch (err) {
    if (err instanceof HttpProblem && err.status >= 400 && err.status < 500) return { ok: false, status: err.status, errors: errorsOf(err) };
    throw err;
  }
}

/** The alert of a refusal that names no field. */
export function formError(errors: Record<string, string>): string {
  const message = errors[''];
  return message ? `<p class="form-error" role="alert">${escapeHtml(message)}</p>` : '';
}

import { STATUS_CODES } from 'node:http';
import { escapeHtml } from '../../../platform/html.ts';
import type { RequestEntry } from '../../usage/request-log.ts';

/** How the Requests pages write figures: money, tokens, milliseconds, times in UTC, statuses; and links to the filtered log. */

/** USD: cents for a dollar or more, four places above a cent, three significant digits below (a call costs fractions of a cent). */
export function usd(n: number): string {
  if (n === 0) return '$0';
  const sign = n < 0 ? '−' : '';
  const a = Math.abs(n);
  if (a >= 1) return `${sign}$${a.toFixed(2)}`;
  if (a >= 0.01) return `${sign}$${a.toFixed(4)}`;
  const places = Math.min(12, 2 - Math.floor(Math.log10(a)));
  return `${sign}$${a.toFixed(places)}`;
}

const INTEGER = new Intl.NumberFormat('en-US');
export const count = (n: number): string => INTEGER.format(n);

export function ms(n: number): string {
  if (n >= 1000) return `${(n / 1000).toFixed(2)} s`;
  return `${n < 10 ? n.toFixed(1) : Math.round(n)} ms`;
}

/** `2026-03-01 12:00:03` (UTC) as `<time>`; `precise` adds the milliseconds; `stacked` puts the time of day under the date. */
export function utc(iso: string, precise = false, stacked = false): string {
  const date = escapeHtml(iso.slice(0, 10));
  const time = escapeHtml(iso.slice(11, precise ? 23 : 19));
  return `<time datetime="${escapeHtml(iso)}">${date}${stacked ? '<br>' : ' '}${time}</time>`;
}

export const isOk = (status: number): boolean => status >= 200 && status <= 299;

/** The status as a badge (the code is the text, the colour only repeats it), with the error code when there is one. */
export function statusBadge(entry: Pick<RequestEntry, 'status' | 'error_code'>, long = false): string {
  const reason = long ? ` ${STATUS_CODES[entry.status] ?? ''}` : '';
  const badge = `<span class="status ${isOk(entry.status) ? 'ok' : 'error'}">${entry.status}${escapeHtml(reason.trimEnd())}</span>`;
  return entry.error_code ? `${badge} <code>${escapeHtml(entry.error_code)}</code>` : badge;
}

/** The request log filtered by one value (a tag, a session, a key, a model). */
export function logLink(name: 'tag' | 'session_id' | 'key_id' | 'model' | 'status' | 'cache_status', value: string, text = value): string {
  return `<a href="${escapeHtml(`/requests?${new URLSearchParams({ [name]: value })}`)}">${escapeHtml(text)}</a>`;
}

export const requestHref = (id: string): string => `/requests/${encodeURIComponent(id)}`;

/** A value that may be absent: "none", muted. */
export const none = '<span class="muted">none</span>';

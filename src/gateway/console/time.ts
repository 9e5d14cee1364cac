import { escapeHtml } from '../../platform/html.ts';

const FORMAT = new Intl.DateTimeFormat('en-GB', { dateStyle: 'medium', timeStyle: 'short', timeZone: 'UTC' });

/** An ISO time as `<time>`: "1 Mar 2026, 12:00 UTC" (UTC, as the limits' windows are), machine-readable in `datetime`. */
export function formatTime(iso: string): string {
  return `<time datetime="${escapeHtml(iso)}">${escapeHtml(FORMAT.format(new Date(iso)))} UTC</time>`;
}

import type { LimitKind } from '../settings/limits.ts';

/**
 * The window a limit counts in: fixed and UTC-aligned, so that every
 * replica (and the usage records a counter is seeded from) agrees on where
 * it starts. Requests count per calendar minute, tokens per day, USD per
 * calendar month. A fixed minute lets a client that waited for the reset
 * send up to twice the limit across one boundary; that is the price of a
 * counter every replica can check in one step (documented).
 */
export interface BudgetWindow {
  /** Tells windows of one kind apart (minutes, days or months since the epoch). */
  id: number;
  start: number;
  /** Exclusive: the instant the counter starts over. */
  end: number;
}

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

/** The last window made of each kind: every call of a minute, day or month asks for the same one. */
const current: Partial<Record<LimitKind, BudgetWindow>> = {};

/** The window of `kind` holding `now` (a shared object: callers only read it). */
export function windowOf(kind: LimitKind, now: number): BudgetWindow {
  const last = current[kind];
  if (last !== undefined && now >= last.start && now < last.end) return last;
  const made = makeWindow(kind, now);
  current[kind] = made;
  return made;
}

function makeWindow(kind: LimitKind, now: number): BudgetWindow {
  if (kind === 'requests') {
    const id = Math.floor(now / MINUTE_MS);
    return { id, start: id * MINUTE_MS, end: (id + 1) * MINUTE_MS };
  }
  if (kind === 'tokens') {
    const id = Math.floor(now / DAY_MS);
    return { id, start: id * DAY_MS, end: (id + 1) * DAY_MS };
  }
  const date = new Date(now);
  const year = date.getUTCFullYear();
  const month = date.getUTCMonth();
  return { id: year * 12 + month, start: Date.UTC(year, month, 1), end: Date.UTC(year, month + 1, 1) };
}

/** The unit a window is named by in messages ("per minute"). */
export const WINDOW_NAME: Record<LimitKind, string> = { requests: 'minute', tokens: 'day (UTC)', usd: 'month (UTC)' };

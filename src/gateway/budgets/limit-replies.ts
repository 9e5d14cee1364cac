import { HttpProblem } from '../../platform/errors.ts';
import { formatUsd } from '../catalog/cost.ts';
import { type HeaderList, headerObject } from '../header-list.ts';
import { LIMIT_FIELD, LIMIT_KINDS, type LimitKind } from '../settings/limits.ts';
import type { CounterSpec, CounterState } from './ledger.ts';

/**
 * What a client is told about its limits: on every answer of a limited
 * call, OpenAI's `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`
 * headers (and `-usd` for a spending limit, named the same way); on a
 * refusal, 429 in the OpenAI error shape naming the limit, whose it is,
 * and when to retry.
 */

/** Header names per kind: limit, remaining, reset. */
const NAMES: Record<LimitKind, readonly [string, string, string]> = {
  requests: ['x-ratelimit-limit-requests', 'x-ratelimit-remaining-requests', 'x-ratelimit-reset-requests'],
  tokens: ['x-ratelimit-limit-tokens', 'x-ratelimit-remaining-tokens', 'x-ratelimit-reset-tokens'],
  usd: ['x-ratelimit-limit-usd', 'x-ratelimit-remaining-usd', 'x-ratelimit-reset-usd'],
};

const whose = (counter: CounterSpec) => (counter.scope === 'key' ? 'this API key' : 'your tenant (all its API keys together)');

const amountText = (kind: LimitKind, n: number) => (kind === 'usd' ? `$${formatUsd(n)}` : Math.ceil(n).toLocaleString('en-US'));

/** OpenAI's duration format for the reset headers: `45s`, `6m0s`, `23h59m59s`. */
export function resetText(ms: number): string {
  return secondsText(Math.max(1, Math.ceil(ms / 1000)));
}

function secondsText(total: number): string {
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  return h > 0 ? `${h}h${m}m${s}s` : m > 0 ? `${m}m${s}s` : `${s}s`;
}

function remaining(counter: CounterSpec, state: CounterState): number {
  const left = Math.max(0, counter.limit - state.used - state.reserved);
  return counter.kind === 'usd' ? left : Math.floor(left);
}

/**
 * The three headers of a counter. What changes only with the limit or once
 * a second (the limit, the time to reset) is kept on the counter, which
 * the budgets stage reuses while its window lasts: written afresh, they
 * were most of this stage's own time per call.
 */
function headersOf(counter: CounterSpec, state: CounterState, now: number, into: HeaderList): void {
  const [limit, remainingName, reset] = NAMES[counter.kind];
  const left = remaining(counter, state);
  const usd = counter.kind === 'usd';
  const seconds = Math.max(1, Math.ceil((counter.window.end - now) / 1000));
  if (counter.resetSeconds !== seconds) {
    counter.resetSeconds = seconds;
    counter.resetText = secondsText(seconds);
  }
  counter.limitText ??= usd ? formatUsd(counter.limit) : String(counter.limit);
  into.push(
    limit,
    counter.limitText,
    remainingName,
    usd ? formatUsd(left) : String(left),
    reset,
    counter.resetText!,
  );
}

/**
 * The headers of an admitted call, appended to `into` as names and values
 * (flat, as the answer's head is written): per kind, the tighter of the
 * key's and the tenant's counters (the one with less left).
 */
export function rateLimitHeaders(counters: readonly CounterSpec[], states: readonly CounterState[], now: number, into: HeaderList = []): HeaderList {
  for (const kind of LIMIT_KINDS) {
    let tightest = -1;
    for (let i = 0; i < counters.length; i++) {
      if (counters[i]!.kind !== kind) continue;
      if (tightest === -1 || remaining(counters[i]!, states[i]!) < remaining(counters[tightest]!, states[tightest]!)) tightest = i;
    }
    if (tightest !== -1) headersOf(counters[tightest]!, states[tightest]!, now, into);
  }
  return into;
}

/**
 * 429 for the counter that refused. Retry-After is the end of the window,
 * except when only calls still in flight stand in the way of a tokens or
 * USD limit (their estimates settle lower): then one second.
 */
export function limitExceeded(counter: CounterSpec, state: CounterState, amount: number, now: number): HttpProblem {
  const kind = counter.kind;
  const field = LIMIT_FIELD[kind];
  const toReset = counter.window.end - now;
  const inFlightOnly = kind !== 'requests' && state.used + amount <= counter.limit && state.reserved > 0;
  const retryMs = inFlightOnly ? 1000 : toReset;
  const retryS = Math.max(1, Math.ceil(retryMs / 1000));
  const resetAt = new Date(counter.window.end).toISOString();
  const taken = amountText(kind, state.used + state.reserved);
  let detail: string;
  let code: string;
  let type: string;
  if (kind === 'requests') {
    code = 'rate_limit_exceeded';
    type = 'requests';
    detail = `Rate limit reached: ${whose(counter)} allows ${counter.limit} requests per minute. Retry after ${retryS} s.`;
  } else {
    const noun = kind === 'tokens' ? `${amountText(kind, counter.limit)} tokens per day (UTC)` : `${amountText(kind, counter.limit)} per month (UTC)`;
    code = kind === 'tokens' ? 'token_limit_exceeded' : 'budget_exceeded';
    type = kind === 'tokens' ? 'tokens' : 'insufficient_quota';
    const head = kind === 'tokens' ? 'Token limit reached' : 'Spending limit reached';
    const spent = kind === 'tokens' ? `${taken} tokens are used or reserved` : `${taken} is spent or reserved`;
    const need = kind === 'tokens' ? `${amountText(kind, amount)} tokens` : amountText(kind, amount);
    const when = amount > counter.limit
      ? 'This request alone is larger than the limit: lower max_tokens (or max_completion_tokens).'
      : inFlightOnly
        ? 'Calls in flight hold the rest; retry in a moment.'
        : `It resets at ${resetAt}.`;
    detail = `${head}: ${whose(counter)} allows ${noun}; ${spent} and this request may need up to ${need}. ${when}`;
  }
  const headers: HeaderList = ['retry-after', String(retryS), 'x-gateway-limit-exceeded', `${counter.scope}.${field}`];
  headersOf(counter, state, now, headers);
  return new HttpProblem(429, code, detail, { type, headers: headerObject(headers) });
}

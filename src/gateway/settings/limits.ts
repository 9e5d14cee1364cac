import { type Static, Type } from 'typebox';
import { Value } from 'typebox/value';

/**
 * Limits of a tenant (settings section `limits`) or of one API key (column
 * `api_keys.limits`); an unset field is no limit. Windows are UTC and fixed:
 * the calendar minute, day and month (docs/gateway-budgets.md).
 */
export const Limits = Type.Object(
  {
    requests_per_minute: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 1_000_000, description: 'Requests admitted per UTC calendar minute.' }),
    ),
    tokens_per_day: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 1e12, description: 'Prompt plus completion tokens per UTC day (cache hits are free).' }),
    ),
    usd_per_month: Type.Optional(
      Type.Number({ minimum: 0, maximum: 1e9, description: 'USD spent per UTC calendar month, at the catalog prices (0: no priced call).' }),
    ),
  },
  { additionalProperties: false },
);
export type Limits = Static<typeof Limits>;

/** What each limit is called in messages, headers and the API, by kind. */
export const LIMIT_KINDS = ['requests', 'tokens', 'usd'] as const;
export type LimitKind = (typeof LIMIT_KINDS)[number];

export const LIMIT_FIELD: Record<LimitKind, keyof Limits> = {
  requests: 'requests_per_minute',
  tokens: 'tokens_per_day',
  usd: 'usd_per_month',
};

/** The limits if at least one is set, else undefined: the data plane's "nothing to enforce" test is one comparison. */
export function activeLimits(limits: Limits | undefined): Limits | undefined {
  if (limits === undefined) return undefined;
  return limits.requests_per_minute !== undefined || limits.tokens_per_day !== undefined || limits.usd_per_month !== undefined
    ? limits
    : undefined;
}

/** A stored limits document (api_keys.limits) read back: one that no longer validates counts as none, never as a failed call. */
export function parseLimits(json: string): Limits | undefined {
  if (json === '{}' || json === '') return undefined;
  try {
    const doc: unknown = JSON.parse(json);
    return Value.Check(Limits, doc) ? activeLimits(doc) : undefined;
  } catch {
    return undefined;
  }
}

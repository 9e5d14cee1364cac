import { isObject } from './json.ts';

/**
 * The largest token count the gateway takes from a provider, per field and
 * per sum (Anthropic's prompt is input + cache reads + cache writes). Not
 * the model's context window: the catalog lags behind the providers (a
 * beta header takes Claude Sonnet 4 to a million tokens; a tenant's own
 * base_url may serve any model), and a true count clamped would bill the
 * tenant less than the provider did. 10^9 is a thousand times the largest
 * window sold today, yet keeps every count within PostgreSQL's `integer`
 * column (2^31 - 1, with room for a cache hit's saved prompt + completion)
 * and every cost finite: 10^9 tokens at the dearest catalog price is
 * 75,000 USD.
 */
export const MAX_TOKEN_COUNT = 1_000_000_000;

/**
 * Reads a provider's token counts (untrusted JSON) as whole numbers from 0
 * to MAX_TOKEN_COUNT, and remembers whether any had to be clamped: a
 * negative count, NaN or a value that is not a number is 0; a fraction is
 * rounded up (the provider billed part of a token); anything larger than
 * the bound (1e308, or 1e999, which JSON.parse reads as Infinity) is the
 * bound. An absent or null field is 0 without a flag: providers leave out
 * what does not apply (Anthropic's cache fields, OpenAI's details).
 */
export class CountReader {
  /** A count was out of bounds and clamped (the usage record's `clamped` flag). */
  clamped = false;

  /** `value[key]` as a count; 0 when `value` is not an object. */
  field(value: unknown, key: string): number {
    return isObject(value) ? this.count(value[key]) : 0;
  }

  count(value: unknown): number {
    if (value === undefined || value === null) return 0;
    if (typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= MAX_TOKEN_COUNT) return value;
    this.clamped = true;
    if (typeof value !== 'number' || Number.isNaN(value) || value < 0) return 0;
    return value > MAX_TOKEN_COUNT ? MAX_TOKEN_COUNT : Math.ceil(value);
  }

  /** A sum of counts, kept within the bound. */
  bound(sum: number): number {
    if (sum <= MAX_TOKEN_COUNT) return sum;
    this.clamped = true;
    return MAX_TOKEN_COUNT;
  }
}

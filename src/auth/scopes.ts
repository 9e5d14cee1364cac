import { HttpProblem } from '../platform/errors.ts';

/**
 * The fixed scope registry, with the plain words the consent page shows.
 * A write scope implies its read scope wherever scopes are checked.
 */
export const SCOPES: Readonly<Record<string, string>> = {
  identity: 'Confirm who you are, including your email address',
  'msg:messages:read': 'Read your messages',
  'msg:messages:write': 'Read, send and change your messages',
  'work:tasks:read': 'Read your tasks',
  'work:tasks:write': 'Read, create and change your tasks',
};

export const DEFAULT_SCOPE = 'identity';

/** Scopes a write scope brings with it. */
const IMPLIES: Readonly<Record<string, string[]>> = {
  'msg:messages:write': ['msg:messages:read'],
  'work:tasks:write': ['work:tasks:read'],
};

export class UnknownScopeError extends Error {
  readonly scope: string;
  constructor(scope: string) {
    super(`Unknown scope "${scope.slice(0, 64)}".`);
    this.scope = scope;
  }
}

/**
 * Parses a space-separated scope string (RFC 6749 section 3.3). Missing or
 * empty means `identity`. Duplicates collapse; order is the registry's.
 * Throws UnknownScopeError for a scope outside the registry.
 */
export function parseScope(input: string | undefined | null): string[] {
  const words = (input ?? '').split(' ').filter((w) => w !== '');
  if (words.length === 0) return [DEFAULT_SCOPE];
  for (const w of words) if (!Object.hasOwn(SCOPES, w)) throw new UnknownScopeError(w);
  const set = new Set(words);
  return Object.keys(SCOPES).filter((s) => set.has(s));
}

/** The scopes a set grants, with the read scopes its write scopes imply. */
export function expandScopes(scopes: readonly string[]): Set<string> {
  const out = new Set(scopes);
  for (const s of scopes) for (const implied of IMPLIES[s] ?? []) out.add(implied);
  return out;
}

/** True when every scope in `requested` is granted by `granted` (implications included). */
export function scopesCovered(granted: readonly string[], requested: readonly string[]): boolean {
  const have = expandScopes(granted);
  return requested.every((s) => have.has(s));
}

/** parseScope, with an unknown scope turned into the caller's error (invalid_scope, invalid_client_metadata, ...). */
export function parseScopeOr(input: string | undefined | null, fail: (description: string) => Error): string[] {
  try {
    return parseScope(input);
  } catch (err) {
    if (err instanceof UnknownScopeError) throw fail(err.message);
    throw err;
  }
}

export function formatScope(scopes: readonly string[]): string {
  return scopes.join(' ');
}

/** parseScope for our own problem+json APIs (personal access tokens). */
export function requireScope(input: string | undefined): string[] {
  return parseScopeOr(
    input,
    (message) =>
      new HttpProblem(400, 'invalid_scope', `${message} Known scopes: ${Object.keys(SCOPES).join(', ')}.`, {
        errors: [{ field: 'scope', message }],
      }),
  );
}

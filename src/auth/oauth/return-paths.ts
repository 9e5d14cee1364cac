/**
 * The service's own pages that the sign-in page may return to once the user
 * has signed in (the other return is to a pending authorization request).
 * The form names one of these paths, never a URL: anything else is refused,
 * so the sign-in page cannot be made to redirect elsewhere (open redirect,
 * CWE-601; ASVS 5.1.5). Each path comes with what the sign-in page says the
 * sign-in is for.
 */
const RETURN_PAGES = {
  '/account': 'to see your signed-in devices and the applications that can act for you',
} as const;

export type ReturnPath = keyof typeof RETURN_PAGES;

/** The return path named by a form or query, or null for anything that is not exactly one of ours. */
export function returnPath(value: string | undefined): ReturnPath | null {
  return value !== undefined && Object.hasOwn(RETURN_PAGES, value) ? (value as ReturnPath) : null;
}

/** What the sign-in page says the sign-in is for. */
export function returnPurpose(path: ReturnPath): string {
  return RETURN_PAGES[path];
}

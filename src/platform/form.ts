import type { App } from './http.ts';

/**
 * At most this many fields in one form body. Our largest form (the token
 * endpoint's) has about ten; a body of thousands of fields is no client's.
 */
export const MAX_FORM_FIELDS = 100;

/** The error a form body with too many fields is refused with (mapped to a 400 by each scope's error handler). */
export class TooManyFormFields extends Error {
  readonly code = 'ERR_FORM_TOO_MANY_FIELDS';
  readonly statusCode = 400;
  constructor() {
    super(`The form has more than ${MAX_FORM_FIELDS} fields.`);
    this.name = 'TooManyFormFields';
  }
}

/**
 * Parses an application/x-www-form-urlencoded body (URLSearchParams does the
 * decoding). A repeated key becomes an array, so callers can refuse
 * duplicates instead of silently keeping one. Linear in the body's length:
 * the fields are counted before anything is decoded, and repeated values are
 * appended in place (copying the array on every repetition made a 64 KB body
 * of `a&a&a...` cost seconds of event-loop time).
 */
export function parseForm(body: string): Record<string, string | string[]> {
  let fields = 0;
  for (let start = 0; start <= body.length; ) {
    let end = body.indexOf('&', start);
    if (end < 0) end = body.length;
    // WHATWG URL section 5.1: empty sequences between '&' are skipped, so they are no field.
    if (end > start && ++fields > MAX_FORM_FIELDS) throw new TooManyFormFields();
    start = end + 1;
  }
  const out: Record<string, string | string[]> = Object.create(null);
  for (const [key, value] of new URLSearchParams(body)) {
    const prev = out[key];
    if (prev === undefined) out[key] = value;
    else if (Array.isArray(prev)) prev.push(value);
    else out[key] = [prev, value];
  }
  return out;
}

/** Accepts form bodies in the scope it is called on (see `parseForm`). */
export function acceptFormBodies(app: App): void {
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => {
    try {
      done(null, parseForm(body as string));
    } catch (err) {
      done(err as Error, undefined);
    }
  });
}

import type { App } from './http.ts';

/**
 * Parses application/x-www-form-urlencoded bodies in the scope it is called
 * on (URLSearchParams does the decoding). A repeated key becomes an array, so
 * callers can refuse duplicates instead of silently keeping one.
 */
export function acceptFormBodies(app: App): void {
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => {
    const out: Record<string, string | string[]> = Object.create(null);
    for (const [key, value] of new URLSearchParams(body as string)) {
      const prev = out[key];
      out[key] = prev === undefined ? value : Array.isArray(prev) ? [...prev, value] : [prev, value];
    }
    done(null, out);
  });
}

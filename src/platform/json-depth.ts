import { HttpProblem } from './errors.ts';

/**
 * The deepest nesting of arrays and objects a JSON request body may have.
 * JSON.parse itself has no limit, but much of what runs on a body does
 * walk it by recursion (JSON.stringify, a canonical form for a cache key,
 * schema validators): a body a few thousand levels deep made the gateway's
 * cache key throw a RangeError (a 500 instead of a 400). 128 is far above
 * what a real request reaches: a chat request's messages and content parts
 * take 7 levels, and a tool's or a response format's JSON schema two levels
 * per nested property (OpenAI accepts schemas of up to 10 nested levels:
 * about 30 in all).
 */
export const MAX_JSON_DEPTH = 128;

export const BODY_TOO_DEEP = `The request body nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep.`;

/**
 * The JSON parser's refusal, as a framework error: problem-mapping.ts gives
 * it its code (body_too_deep) and sentence in each scope's format, RFC 6749's
 * invalid_request on the OAuth endpoints as for malformed JSON.
 */
export class BodyTooDeepError extends Error {
  readonly code = 'ERR_BODY_TOO_DEEP';
  readonly statusCode = 400;
  constructor() {
    super(BODY_TOO_DEEP);
  }
}

/** The same refusal from code that walks a body (the gateway's cache key), as the problem its stages throw. */
export const bodyTooDeep = () => new HttpProblem(400, 'body_too_deep', BODY_TOO_DEEP, { type: 'invalid_request_error' });

/**
 * Whether the JSON text nests arrays and objects deeper than `max`, read
 * before it is parsed: a body refused here is never built in memory
 * (JSON.parse of 8 million nested arrays, a 16 MB body, took 9 s and 461 MB
 * of heap). A body with no more than `max` brackets in all is passed at once
 * (a chat request of 2 KB: 0.1 us, against 1.5 us for its JSON.parse); any
 * other takes one pass, strings skipped with indexOf (1 MB of agent
 * transcript: about 1 ms, against 1.3 ms for its JSON.parse). Text that is
 * not JSON is left to the parser.
 */
export function jsonNestsDeeperThan(text: string, max: number): boolean {
  if (!opensMoreThan(text, max)) return false;
  let depth = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 34) {
      i = stringEnd(text, i);
      if (i < 0) return false;
    } else if (c === 91 || c === 123) {
      if (++depth > max) return true;
    } else if (c === 93 || c === 125) depth--;
  }
  return false;
}

/**
 * Whether the text holds more than `max` of `[` and `{` (inside strings or
 * not): a body with no more cannot nest deeper. Two native searches, so a
 * chat request of a few kilobytes (a handful of brackets) costs about
 * 0.1 us here instead of the pass below.
 */
function opensMoreThan(text: string, max: number): boolean {
  let n = 0;
  for (let at = text.indexOf('['); at >= 0 && n <= max; at = text.indexOf('[', at + 1)) n++;
  for (let at = text.indexOf('{'); at >= 0 && n <= max; at = text.indexOf('{', at + 1)) n++;
  return n > max;
}

/** The index of the quote closing the string opened at `open` (one not escaped by an odd run of backslashes), or -1. */
function stringEnd(text: string, open: number): number {
  for (let at = text.indexOf('"', open + 1); at >= 0; at = text.indexOf('"', at + 1)) {
    let backslashes = 0;
    while (text.charCodeAt(at - 1 - backslashes) === 92) backslashes++;
    if ((backslashes & 1) === 0) return at;
  }
  return -1;
}

import type { UsageRecordRow } from '../schema.ts';
import type { Call } from './call.ts';
import { jsonPrefix } from './json-prefix.ts';

type Bodies = Pick<UsageRecordRow, 'request_body' | 'response_body' | 'body_storage'>;

const OFF: Bodies = { request_body: null, response_body: null, body_storage: null };
const NOT_SENT: Bodies = { request_body: null, response_body: null, body_storage: 'not_sent' };
const QUOTA_FULL: Bodies = { request_body: null, response_body: null, body_storage: 'quota_full' };

/**
 * The bodies a call's usage record keeps, for a tenant that stores them
 * (call.tenant.bodies), in this order:
 * 1. only a call that reached a provider keeps them: an upstream attempt went
 *    out, or its answer came from one through the cache or an identical call
 *    in flight (a hit or a dedup is a real answer the client got; it was paid
 *    for once, by the call that stored it). A call refused before (no
 *    provider key, a limit, a bad request) keeps nothing: `not_sent`;
 * 2. only while the tenant's quota has room: `quota_full` (the call itself
 *    is served and recorded as ever);
 * 3. each body cut at GATEWAY_STORED_BODY_MAX_BYTES, on a character
 *    boundary: `request_truncated`, `response_truncated`;
 * 4. their bytes taken from the quota; bodies that would pass it are not kept.
 */
export function storedBodies(call: Call): Bodies {
  const storage = call.tenant.bodies;
  if (storage === undefined) return OFF;
  if (!reachedProvider(call)) return NOT_SENT;
  if (!storage.hasRoom) return QUOTA_FULL;
  const max = storage.maxBytes;
  const request = capUtf8(requestText(call, max), max);
  const response = call.storedResponse === undefined ? undefined : capUtf8(call.storedResponse, max);
  if (!storage.take(request.bytes + (response?.bytes ?? 0))) return QUOTA_FULL;
  const cut = request.truncated ? (response?.truncated ? 'request_truncated,response_truncated' : 'request_truncated') : response?.truncated ? 'response_truncated' : 'stored';
  return { request_body: request.text, response_body: response?.text ?? null, body_storage: cut };
}

function reachedProvider(call: Call): boolean {
  if (call.cacheStatus === 'hit' || call.cacheStatus === 'dedup') return true;
  for (const attempt of call.attempts) if (attempt.errorCode !== 'circuit_open') return true;
  return false;
}

/**
 * The request as JSON, at most about `maxBytes` of it made. A body whose
 * request said it was no larger (Content-Length) is written whole by
 * JSON.stringify, the fast way; a larger or chunked one only as far as the
 * cap needs (jsonPrefix).
 */
function requestText(call: Call, maxBytes: number): string {
  const declared = Number(call.headers['content-length']);
  // The client's own request where its surface keeps one (Messages): what the tenant reads back is what its client sent.
  const body = call.surface.request ?? call.body;
  if (declared > 0 && declared <= maxBytes) return JSON.stringify(body);
  return jsonPrefix(body, maxBytes).text;
}

const encoder = new TextEncoder();
let scratch = new Uint8Array(0);

/**
 * `text` cut to at most `maxBytes` bytes of UTF-8, never inside a character
 * (TextEncoder.encodeInto writes whole characters only), and its byte
 * length. Linear in the part kept. A cut text is decoded from those bytes
 * afresh, so it holds no reference to a larger original.
 */
export function capUtf8(text: string, maxBytes: number): { text: string; bytes: number; truncated: boolean } {
  // A UTF-16 unit is at most 3 bytes of UTF-8: a text this short fits whole.
  if (text.length * 3 <= maxBytes) return { text, bytes: Buffer.byteLength(text), truncated: false };
  if (scratch.length < maxBytes) scratch = new Uint8Array(maxBytes);
  const { read, written } = encoder.encodeInto(text, scratch.subarray(0, maxBytes));
  if (read === text.length) return { text, bytes: written, truncated: false };
  return { text: Buffer.from(scratch.buffer, scratch.byteOffset, written).toString('utf8'), bytes: written, truncated: true };
}

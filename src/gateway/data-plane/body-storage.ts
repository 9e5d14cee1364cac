/**
 * A tenant's body storage as one replica sees it, made when the tenant's
 * context is loaded (tenant-context.ts, at most 60 s old, and again after
 * any change of its settings): the cap on each body, and the room left in
 * its quota, which is the quota less what the database counted then
 * (stored-body-bytes.ts) less what this replica has kept since. Replicas
 * do not see each other's bodies until they reload, so together they may
 * pass a quota by at most what each keeps in one context's lifetime, never
 * more than the quota itself per replica.
 */
export class BodyStorage {
  /** GATEWAY_STORED_BODY_MAX_BYTES: each body (request, response) is cut there. */
  readonly maxBytes: number;
  #room: number;

  constructor(maxBytes: number, quotaBytes: number, storedBytes: number) {
    this.maxBytes = maxBytes;
    this.#room = quotaBytes - storedBytes;
  }

  /** Whether any room is left (checked before a call's bodies are serialized). */
  get hasRoom(): boolean {
    return this.#room > 0;
  }

  /** Takes `bytes` of the room, if that much is left. */
  take(bytes: number): boolean {
    if (bytes > this.#room) return false;
    this.#room -= bytes;
    return true;
  }
}

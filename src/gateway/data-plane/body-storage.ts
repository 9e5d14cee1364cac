/**
 * A tenant's storage quota (GATEWAY_STORED_BODIES_QUOTA_BYTES) as one
 * replica sees it, made when the tenant's context is loaded
 * (tenant-context.ts, at most 60 s old, and again after any change of its
 * settings): the quota less what the database counted then (stored bodies,
 * stored-body-bytes.ts; stored responses, surfaces/responses/store.ts)
 * less what this replica has kept since. Bodies and stored responses share
 * it. Replicas do not see each other's writes until they reload, so
 * together they may pass a quota by at most what each keeps in one
 * context's lifetime; deleting or purging frees room at the next load.
 */
export class StorageRoom {
  #room: number;

  constructor(quotaBytes: number, storedBytes: number) {
    this.#room = quotaBytes - storedBytes;
  }

  /** Whether any room is left. */
  get hasRoom(): boolean {
    return this.#room > 0;
  }

  /** Takes `bytes` of the room, if that much is left. */
  take(bytes: number): boolean {
    if (bytes > this.#room) return false;
    this.#room -= bytes;
    return true;
  }

  /**
   * Counts `bytes` kept whatever the room: a stored response was checked
   * for room before its call went upstream, and is kept once answered.
   */
  use(bytes: number): void {
    this.#room -= bytes;
  }
}

/** A tenant's body storage: the cap on each body, and the room its quota has left (shared with stored responses). */
export class BodyStorage {
  /** GATEWAY_STORED_BODY_MAX_BYTES: each body (request, response) is cut there. */
  readonly maxBytes: number;
  readonly #room: StorageRoom;

  constructor(maxBytes: number, room: StorageRoom) {
    this.maxBytes = maxBytes;
    this.#room = room;
  }

  /** Whether any room is left (checked before a call's bodies are serialized). */
  get hasRoom(): boolean {
    return this.#room.hasRoom;
  }

  /** Takes `bytes` of the room, if that much is left. */
  take(bytes: number): boolean {
    return this.#room.take(bytes);
  }
}

import { type AnyDb, closeDatabase, migrateToLatest, openDatabase } from './db.ts';
import type { Migration } from 'kysely';
import { resealBody } from './mail.ts';

/** What one rotation pass found in one kind of sealed data. */
export interface RotationCount {
  /** What was looked at, e.g. "gateway provider keys". */
  what: string;
  /** Sealed again under the current key. */
  resealed: number;
  /** Already under the current key (or never sealed). */
  current: number;
  /** Opened by no key given: left as they are, named here (ids, never contents). */
  unreadable: string[];
}

const PAGE = 500;

/**
 * Seals every outbox body that a retired key sealed again under `key`
 * (`npm run rotate-keys`), page by page in id order. Each row is updated
 * only if its bodies are still those read (compare and set), so a worker
 * sending or failing it meanwhile wins and nothing is overwritten.
 */
export async function resealOutbox(db: AnyDb, key: Buffer, retired: readonly Buffer[], what: string): Promise<RotationCount> {
  const count: RotationCount = { what, resealed: 0, current: 0, unreadable: [] };
  let after = '';
  for (;;) {
    const rows: { id: string; text_body: string; html_body: string | null }[] = await db
      .selectFrom('outbox')
      .select(['id', 'text_body', 'html_body'])
      .where('id', '>', after)
      .orderBy('id')
      .limit(PAGE)
      .execute();
    if (rows.length === 0) return count;
    after = rows.at(-1)!.id;
    for (const row of rows) {
      let text: string | undefined;
      let html: string | undefined;
      try {
        text = resealBody(key, retired, row.id, 'text', row.text_body);
        html = row.html_body === null ? undefined : resealBody(key, retired, row.id, 'html', row.html_body);
      } catch {
        count.unreadable.push(`outbox ${row.id}`);
        continue;
      }
      if (text === undefined && html === undefined) {
        count.current++;
        continue;
      }
      const updated = await db
        .updateTable('outbox')
        .set({ text_body: text ?? row.text_body, html_body: html ?? row.html_body })
        .where('id', '=', row.id)
        .where('text_body', '=', row.text_body)
        .executeTakeFirst();
      if (Number(updated.numUpdatedRows) === 1) count.resealed++;
      else count.current++; // changed meanwhile by the worker (sent, failed or wiped), under the current key if at all
    }
  }
}

/** Opens a service's database (migrated first, as the service itself would at start), runs `rotate` on it, closes it. */
export async function rotateIn(
  database: { url: string | undefined; sqlitePath: string },
  migrations: Record<string, Migration>,
  rotate: (db: AnyDb) => Promise<RotationCount[]>,
): Promise<RotationCount[]> {
  const { db } = await openDatabase<unknown>(database);
  try {
    await migrateToLatest(db, migrations);
    return await rotate(db as AnyDb);
  } finally {
    await closeDatabase(db);
  }
}

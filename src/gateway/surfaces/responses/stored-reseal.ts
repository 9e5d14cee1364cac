import { decryptWithAny, encrypt } from '../../../platform/crypto.ts';
import type { RotationCount } from '../../../platform/key-rotation.ts';
import type { GatewayDb } from '../../schema.ts';
import { storedResponseAad } from './store.ts';

/**
 * `npm run rotate-keys`: every stored response that a retired key sealed,
 * sealed again under `key`, in (tenant, id) order. The keys are read a
 * page at a time and each sealed payload alone (they can be megabytes); a
 * row is updated only if it still holds what was read (compare and set). A
 * row that opens with no key is left as it is and named (tenant and id).
 */
export async function resealStoredResponses(db: GatewayDb, key: Buffer, retired: readonly Buffer[]): Promise<RotationCount> {
  const count: RotationCount = { what: 'gateway stored responses', resealed: 0, current: 0, unreadable: [] };
  const keys = [key, ...retired];
  let after = { tenant: '', id: '' };
  for (;;) {
    const page = await db
      .selectFrom('stored_responses')
      .select(['tenant_id', 'id'])
      .where((eb) => eb.or([eb('tenant_id', '>', after.tenant), eb.and([eb('tenant_id', '=', after.tenant), eb('id', '>', after.id)])]))
      .orderBy('tenant_id')
      .orderBy('id')
      .limit(500)
      .execute();
    if (page.length === 0) return count;
    const last = page.at(-1)!;
    after = { tenant: last.tenant_id, id: last.id };
    for (const { tenant_id, id } of page) {
      const row = await db.selectFrom('stored_responses').select('sealed').where('tenant_id', '=', tenant_id).where('id', '=', id).executeTakeFirst();
      if (row === undefined) continue; // deleted or purged meanwhile
      const aad = storedResponseAad(tenant_id, id);
      let opened: { plaintext: string; keyIndex: number };
      try {
        opened = decryptWithAny(keys, row.sealed, aad);
      } catch {
        count.unreadable.push(`stored response ${id} of tenant ${tenant_id}`);
        continue;
      }
      if (opened.keyIndex === 0) {
        count.current++;
        continue;
      }
      // The same length: AES-GCM adds a fixed IV and tag, so the quota's count of the row stays true.
      const updated = await db
        .updateTable('stored_responses')
        .set({ sealed: encrypt(key, opened.plaintext, aad) })
        .where('tenant_id', '=', tenant_id)
        .where('id', '=', id)
        .where('sealed', '=', row.sealed)
        .executeTakeFirst();
      if (Number(updated.numUpdatedRows) === 1) count.resealed++;
      else count.current++;
    }
  }
}

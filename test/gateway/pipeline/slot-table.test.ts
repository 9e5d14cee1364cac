import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { SlotTable } from '../../../src/gateway/cache/slot-table.ts';

test('the slot table answers like a Map through any sequence of sets and deletes, across growth (property)', () => {
  const slot = fc.oneof(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 0x3fffffff }));
  const op = fc.oneof(
    fc.record({ kind: fc.constant('set' as const), slot, value: fc.integer({ min: 0, max: 2 ** 40 }) }),
    fc.record({ kind: fc.constant('delete' as const), slot }),
  );
  fc.assert(
    fc.property(fc.array(op, { maxLength: 400 }), (ops) => {
      const table = new SlotTable(16);
      const model = new Map<number, number>();
      for (const o of ops) {
        if (o.kind === 'set') {
          table.set(o.slot, o.value);
          model.set(o.slot, o.value);
        } else {
          table.delete(o.slot);
          model.delete(o.slot);
        }
        assert.equal(table.size, model.size);
      }
      for (const [k, v] of model) assert.equal(table.get(k), v);
      for (let k = 0; k <= 40; k++) if (!model.has(k)) assert.equal(table.get(k), -1);
    }),
    { numRuns: 300, seed: 20261125 },
  );
});

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { backoffDelay } from '../../src/platform/mail.ts';

const HOUR = 3_600_000;

describe('backoffDelay', () => {
  const base = 30_000;
  const cap = HOUR;
  const mid = () => 0.5; // no jitter

  test('doubles with each attempt from the base', () => {
    assert.deepEqual(
      [1, 2, 3, 4, 5].map((a) => backoffDelay(a, base, cap, mid)),
      [30_000, 60_000, 120_000, 240_000, 480_000],
    );
    assert.equal(backoffDelay(0, base, cap, mid), base, 'attempt 0 waits the base');
  });

  test('is capped, however many attempts', () => {
    assert.equal(backoffDelay(8, base, cap, mid), cap);
    assert.equal(backoffDelay(50, base, cap, mid), cap);
    assert.equal(backoffDelay(5000, base, cap, mid), cap);
  });

  test('jitter stays within ±20% and actually varies', () => {
    assert.equal(backoffDelay(3, base, cap, () => 0), 96_000);
    assert.equal(backoffDelay(3, base, cap, () => 0.999999), 144_000);
    assert.ok(Math.abs(backoffDelay(20, base, cap, () => 0.999999) - 1.2 * cap) <= 2, 'the cap is jittered too');
    const seen = new Set<number>();
    for (let i = 0; i < 200; i++) {
      const d = backoffDelay(2, base, cap);
      assert.ok(d >= 48_000 && d <= 72_000, `${d} outside 60 s ± 20%`);
      seen.add(d);
    }
    assert.ok(seen.size > 50, 'retries of many rows spread out');
  });
});

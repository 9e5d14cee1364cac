import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import { SummedCounter } from '../../src/platform/metrics.ts';

test('a summed counter reports every increment once, per label set, when the registry is read', async () => {
  const registry = new Registry();
  const counter = new SummedCounter({ name: 'things_total', help: 'Things.', labelNames: ['kind'], registers: [registry] });
  const apples = counter.child('apple', () => ({ kind: 'apple' }));
  counter.child('pear', () => ({ kind: 'pear' })); // made, never counted: not listed
  apples.inc();
  apples.inc(2.5);
  // The same key finds the same child, whatever labels the second caller would have made.
  counter.child('apple', () => assert.fail('labels made twice')).inc();
  // A counter only goes up: what is not a positive finite number is left out rather than breaking the scrape.
  for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) apples.inc(bad);

  const first = await registry.metrics();
  assert.match(first, /^things_total\{kind="apple"\} 4.5$/m);
  assert.doesNotMatch(first, /kind="pear"/);
  // Read again with nothing new: the sums were handed over once, not twice.
  assert.match(await registry.metrics(), /^things_total\{kind="apple"\} 4.5$/m);
  apples.inc(0.5);
  assert.match(await registry.metrics(), /^things_total\{kind="apple"\} 5$/m);
  assert.equal((await counter.counter.get()).values.find((v) => v.labels['kind'] === 'apple')?.value, 5);
});

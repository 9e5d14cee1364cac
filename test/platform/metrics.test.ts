import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Histogram, Registry } from 'prom-client';
import { SummedCounter, SummedHistogram } from '../../src/platform/metrics.ts';

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

test('a summed histogram reads exactly as prom-client\'s own histogram given the same observations', async () => {
  const config = { help: 'Durations.', labelNames: ['route'] as const, buckets: [0.01, 0.1, 1] };
  const ours = new Registry();
  const theirs = new Registry();
  const summed = new SummedHistogram({ ...config, name: 'took_seconds', registers: [ours] });
  const reference = new Histogram({ ...config, labelNames: ['route'], name: 'took_seconds', registers: [theirs] });
  const observations: [string, number][] = [
    ['/a', 0.005],
    ['/a', 0.01], // on a bound: counted in that bucket (le is "less than or equal")
    ['/a', 0.5],
    ['/a', 7],
    ['/b "quoted"', 0.05],
  ];
  for (const [route, value] of observations) {
    summed.child(route, () => ({ route })).observe(value);
    reference.labels({ route }).observe(value);
  }
  // Not a finite number: left out (prom-client's throws, which would break the call that observed it).
  summed.child('/a', () => assert.fail('labels made twice')).observe(Number.NaN);
  assert.equal(await ours.metrics(), await theirs.metrics());
  assert.match(await ours.metrics(), /^took_seconds_bucket\{le="\+Inf",route="\/a"\} 4$/m);

  // Read again: the same (a histogram is cumulative, unlike the counters' hand-over), and reset clears it as prom-client's does.
  assert.equal(await ours.metrics(), await theirs.metrics());
  ours.resetMetrics();
  theirs.resetMetrics();
  assert.equal(await ours.metrics(), await theirs.metrics());
});

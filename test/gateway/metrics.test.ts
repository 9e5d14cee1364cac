import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import { createGatewayMetrics } from '../../src/gateway/metrics.ts';
import type { Call } from '../../src/gateway/pipeline/call.ts';

test("the gateway's overhead histogram counts again after the registry is reset", async () => {
  const registry = new Registry();
  const metrics = createGatewayMetrics(registry);
  const call = { status: 200, cacheStatus: 'miss', target: undefined, overheadMs: 2, upstreamMs: 0, usage: undefined, tokensSaved: 0, costUsd: 0 } as unknown as Call;
  metrics.observeCall(call);
  assert.match(await registry.metrics(), /^gateway_overhead_seconds_count 1$/m);
  registry.resetMetrics();
  metrics.observeCall(call);
  metrics.observeCall(call);
  assert.match(await registry.metrics(), /^gateway_overhead_seconds_count 2$/m);
});

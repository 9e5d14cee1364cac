import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Value } from 'typebox/value';
import { parseCompactMode } from '../../../src/gateway/compaction/mode.ts';
import { loadGatewayConfig } from '../../../src/gateway/config.ts';
import { CompactionSettings } from '../../../src/gateway/settings/compaction.ts';

describe('compaction modes', () => {
  test('off, safe, agent, aggressive (any case) and budgets from 100 to 99,999,999 tokens', () => {
    assert.deepEqual(parseCompactMode('off'), { kind: 'off' });
    assert.deepEqual(parseCompactMode('Agent'), { kind: 'agent' });
    assert.deepEqual(parseCompactMode(' Safe '), { kind: 'safe' });
    assert.deepEqual(parseCompactMode('AGGRESSIVE'), { kind: 'aggressive' });
    assert.deepEqual(parseCompactMode('8000'), { kind: 'budget', tokens: 8000 });
    assert.deepEqual(parseCompactMode('99999999'), { kind: 'budget', tokens: 99_999_999 });
    for (const bad of ['', 'on', '99', '08000', '8000.5', '-8000', '1e4', '100000000', 'safe,aggressive', '8 000']) {
      assert.equal(parseCompactMode(bad), undefined, bad);
    }
  });

  test('the tenant setting accepts exactly what the header does (lower case)', () => {
    for (const value of ['off', 'safe', 'agent', 'aggressive', '100', '8000', '99999999']) assert.ok(Value.Check(CompactionSettings, { default: value }), value);
    for (const value of ['on', '99', '100000000', '08000']) assert.ok(!Value.Check(CompactionSettings, { default: value }), value);
  });

  test('GATEWAY_COMPACT_DEFAULT: off unless set; a wrong value stops the start', () => {
    const base = { DATA_DIR: '/tmp', GATEWAY_ENCRYPTION_KEY: 'b'.repeat(64) };
    assert.deepEqual(loadGatewayConfig(base).compactDefault, { kind: 'off' });
    assert.deepEqual(loadGatewayConfig({ ...base, GATEWAY_COMPACT_DEFAULT: '32000' }).compactDefault, { kind: 'budget', tokens: 32000 });
    assert.deepEqual(loadGatewayConfig({ ...base, GATEWAY_COMPACT_DEFAULT: 'agent' }).compactDefault, { kind: 'agent' });
    assert.throws(() => loadGatewayConfig({ ...base, GATEWAY_COMPACT_DEFAULT: 'lots' }), /GATEWAY_COMPACT_DEFAULT must be off, safe, agent, aggressive/);
  });
});

describe('compaction settings', () => {
  test('read tools and stale clearing are bounded', () => {
    assert.ok(Value.Check(CompactionSettings, { default: 'agent', read_tools: ['read_file', 'Read'], stale_trigger_tokens: 50_000, stale_keep_results: 3, stale_batch_tokens: 20_000 }));
    assert.ok(Value.Check(CompactionSettings, { read_tools: [] }), 'no read tools: superseded-reads off');
    for (const bad of [
      { read_tools: Array.from({ length: 65 }, (_, i) => `t${i}`) },
      { read_tools: ['x'.repeat(65)] },
      { read_tools: [''] },
      { stale_trigger_tokens: 999 },
      { stale_trigger_tokens: 1.5e3 + 0.5 },
      { stale_keep_results: -1 },
      { stale_batch_tokens: 100 },
      { stale_batch_tokens: 10_000_001 },
      { other: 1 },
    ]) {
      assert.ok(!Value.Check(CompactionSettings, bad), JSON.stringify(bad));
    }
  });
});

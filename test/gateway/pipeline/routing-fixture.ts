import { readFileSync } from 'node:fs';
import type { Attempt } from '../../../src/gateway/pipeline/call.ts';
import type { RoutingSettings } from '../../../src/gateway/settings/routing.ts';
import type { UsageRecordRow } from '../../../src/gateway/schema.ts';
import { createFakeProvider, type FakeProvider } from '../../../tools/fake-provider/server.ts';
import type { LiveGateway, LiveTenant } from '../../helpers/gateway-service.ts';

/** What the routing and fallback tests share: the usage record of a call, a tenant on two fakes, its routing settings. */

export const attemptsOf = (row: UsageRecordRow): Attempt[] => (row.attempts ? JSON.parse(row.attempts) : []);

/**
 * A tenant whose OpenAI key points at the gateway's fake and whose Anthropic
 * key points at a second fake: each provider fails or answers on its own.
 */
export async function tenantOnTwoFakes(gw: LiveGateway): Promise<{ t: LiveTenant; anthropic: FakeProvider }> {
  const anthropic = await createFakeProvider();
  const t = await gw.tenant({ providers: ['openai'] });
  const stored = await gw.api('/api/v1/tenant/provider-keys', {
    token: t.session,
    body: { provider: 'anthropic', key: 'anthropic-secret-key-second-fake', base_url: `${anthropic.url}/v1` },
  });
  if (stored.status !== 201) throw new Error(`provider key: ${stored.status} ${JSON.stringify(stored.body)}`);
  return { t, anthropic };
}

/** PATCH /api/v1/tenant with this routing section (null resets it); returns the status. */
export async function setRouting(gw: LiveGateway, t: LiveTenant, routing: RoutingSettings | null): Promise<number> {
  const res = await gw.api('/api/v1/tenant', { method: 'PATCH', token: t.session, body: { settings: { routing } } });
  return res.status;
}

/** One sample of a Prometheus text exposition (0 when absent). */
export async function metric(gw: LiveGateway, name: string, labels: Record<string, string>): Promise<number> {
  const text = await fetch(`${gw.url}/metrics`).then((r) => r.text());
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const inside = line.slice(name.length + 1, line.indexOf('}'));
    if (wanted.every((w) => inside.split(',').includes(w))) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return 0;
}

export interface LabelledPrompt {
  id: string;
  label: 'easy' | 'hard';
  split: 'tuning' | 'holdout';
  output_tokens: number;
  messages: unknown[];
  tools?: unknown[];
  response_format?: unknown;
}

export function labelledPrompts(): LabelledPrompt[] {
  const text = readFileSync(new URL('../../../bench/data/routing-labelled.jsonl', import.meta.url), 'utf8');
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as LabelledPrompt);
}

export { usageRecord } from '../../helpers/gateway-service.ts';

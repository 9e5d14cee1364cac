import { catalogEntry } from '../../src/gateway/catalog/catalog.ts';
import { fmt } from './format.ts';
import type { Row } from './report.ts';
import type { ClientName } from './savings-clients.ts';

/** What one client's way of sending the corpus cost and claimed (bench/benchmarks/gateway-savings.ts). */
export interface Replay {
  calls: number;
  failed: number;
  firstFailure?: string;
  /** Why the way was not replayed (the gateway refused it). */
  skipped?: string;
  /** What the fake billed, priced with the catalog. */
  billedUsd: number;
  /** Prompt tokens billed (sent), and how they were billed. */
  tokens: { sent: number; read: number; written: number; uncached: number };
  /** bench/lib/upstream-prompts.ts RewriteMeter, summed over turns. */
  rewrittenTokens: number;
  /** Turns with a latest exchange (an assistant message before the turn's end), and those where it reached the fake changed. */
  exchangeTurns: number;
  exchangeChanged: number;
  /** Turns whose last message's last block reached the fake with a cache_control. */
  markedTurns: number;
  /** Sum of X-Gateway-Cost-Saved (gateway ways only). */
  headerClaimedUsd?: number;
  /** From the usage records (gateway ways only). */
  claims?: { costSavedUsd: number; columns: Record<string, number>; providerCacheUsd: number | undefined; recordedCostUsd: number };
  seconds: number;
}

export const usd = (x: number) => `${x < 0 ? '-' : ''}$${Math.abs(x).toFixed(4)}`;

/**
 * The claim against the measured saving: within 5 % of |measured|; when
 * |measured| is under 1 % of the direct bill, within 1 % of the direct bill
 * instead (a 5 % band around nearly nothing would fail any rounding).
 */
export function judgeClaim(direct: Replay, gw: Replay): { claimed: number; measured: number; ok: boolean; text: string } {
  const claimed = gw.claims?.costSavedUsd ?? 0;
  const measured = direct.billedUsd - gw.billedUsd;
  const gap = Math.abs(claimed - measured);
  const small = Math.abs(measured) < 0.01 * direct.billedUsd;
  const ok = small ? gap <= 0.01 * direct.billedUsd : gap <= 0.05 * Math.abs(measured);
  const over = measured !== 0 ? `${fmt(claimed / measured, 2)}x measured` : 'nothing measured';
  const text = small ? `${ok ? 'within' : 'beyond'} 1 % of the direct bill, the saving being under 1 % of it` : ok ? 'within 5 %' : `claim ${over}`;
  return { claimed, measured, ok, text };
}

/** One replay's figures, as sentences for the report's details. */
export function replayDetails(label: string, model: string, client: ClientName, direct: Replay | undefined, r: Replay): string[] {
  if (r.skipped !== undefined) return [`${label}: skipped: ${r.skipped}.`];
  const t = r.tokens;
  const lines = [
    `${label}: billed ${usd(r.billedUsd)} for ${r.calls} calls; ${t.sent} prompt tokens sent: ${t.read} read from cache, ${t.written} written, ${t.uncached} uncached; ` +
      `${r.rewrittenTokens} tokens rewritten; latest exchange changed in ${r.exchangeChanged} of ${r.exchangeTurns} turns (${fmt(r.seconds)} s).`,
  ];
  if (model.startsWith('anthropic/') && client === 'cache-aware') {
    lines.push(`${label}: the client's breakpoint on the last message reached the fake in ${r.markedTurns} of ${r.calls} turns.`);
  }
  if (direct !== undefined && r.claims !== undefined) {
    const c = r.claims;
    const claim = judgeClaim(direct, r);
    const columns = Object.entries(c.columns)
      .map(([name, value]) => `${name} ${usd(value)}`)
      .join(', ');
    const columnsSum = Object.values(c.columns).reduce((a, b) => a + b, 0);
    const headers = r.headerClaimedUsd ?? 0;
    const agree = (x: number) => Math.abs(x - c.costSavedUsd) <= 1e-6 * Math.max(1, r.calls);
    lines.push(
      `${label}: claimed ${usd(c.costSavedUsd)} (cost_saved_usd; ${columns}${agree(columnsSum) ? '' : `: these sum to ${usd(columnsSum)}, not cost_saved_usd`}); ` +
        `X-Gateway-Cost-Saved summed ${usd(headers)}${agree(headers) ? ', agreeing' : ', DISAGREEING'}; the provider's own caching per the records (saved_provider_cache_usd) ${c.providerCacheUsd === undefined ? 'not recorded (no such column; counted as $0)' : usd(c.providerCacheUsd)}; ` +
        `measured saving ${usd(claim.measured)} against ${usd(direct.billedUsd)} direct: ${claim.text}. The gateway recorded ${usd(c.recordedCostUsd)} of cost; the fake billed ${usd(r.billedUsd)}.`,
    );
  }
  if (r.failed > 0) lines.push(`${label}: ${r.failed} failed calls; first: ${r.firstFailure}.`);
  return lines;
}

export const shortModel = (model: string) => model.slice(model.indexOf('/') + 1);

export function directRow(model: string, client: ClientName, direct: Replay, naiveDirect: Replay): Row {
  const vsNaive = client === 'naive' ? '' : `; ${fmt(direct.billedUsd / naiveDirect.billedUsd, 2)}x the naive client's`;
  return {
    id: '7',
    benchmark: `savings: ${shortModel(model)}, ${client} client, direct`,
    measured: usd(direct.billedUsd),
    baseline: 'the fake provider, no gateway',
    result: `${direct.tokens.sent} prompt tokens, ${fmt((100 * direct.tokens.read) / Math.max(1, direct.tokens.sent), 1)} % read from cache${vsNaive}`,
    target: 'none (reported)',
    pass: direct.failed === 0,
    verdict: direct.failed > 0 ? 'FAILED CALLS' : 'info',
  };
}

export function wayRow(model: string, client: ClientName, way: { name: string; target?: { ratio: number; clients: readonly ClientName[] } }, direct: Replay, gw: Replay): Row {
  const benchmark = `savings: ${shortModel(model)}, ${client} client, ${way.name}`;
  const ratioTarget = way.target?.clients.includes(client) ? way.target.ratio : undefined;
  const target = [ratioTarget === undefined ? undefined : `at most ${fmt(ratioTarget, 2)}x direct`, 'claim within 5 %', 'latest exchange intact'].filter(Boolean).join('; ');
  if (gw.skipped !== undefined) {
    return { id: '7', benchmark, measured: 'skipped', baseline: `${usd(direct.billedUsd)} direct`, result: 'refused by the gateway', target, pass: false, verdict: 'SKIPPED' };
  }
  const ratio = gw.billedUsd / direct.billedUsd;
  const claim = judgeClaim(direct, gw);
  const exchange = gw.exchangeChanged === 0 ? 'latest exchange intact' : `latest exchange changed in ${gw.exchangeChanged} of ${gw.exchangeTurns} turns`;
  const pass = (ratioTarget === undefined || ratio <= ratioTarget) && claim.ok && gw.exchangeChanged === 0 && gw.failed === 0 && direct.failed === 0;
  return {
    id: '7',
    benchmark,
    measured: `${usd(gw.billedUsd)} (${fmt(ratio, 2)}x direct)`,
    baseline: `${usd(direct.billedUsd)} direct`,
    result: `claimed ${usd(claim.claimed)}, saved ${usd(claim.measured)} (${claim.text}); ${exchange}${gw.failed > 0 ? `; ${gw.failed} failed calls` : ''}`,
    target,
    pass,
  };
}

/**
 * How low any compaction that sends each turn's latest exchange whole could
 * take this client's bill: the direct bill less everything its cache reads
 * cost (as if every token before the latest exchange were free), leaving
 * what it paid for each turn's new tokens (written, or sent uncached) and
 * for the output. A floor, not a reachable figure: the system prompt and
 * tools are read on every turn too.
 */
export function floorDetail(label: string, model: string, direct: Replay): string {
  const entry = catalogEntry(model.split('/')[0]!, model.slice(model.indexOf('/') + 1));
  if (entry === undefined || direct.billedUsd === 0) return `${label}: no floor (no catalog price).`;
  const reads = (direct.tokens.read * entry.cachedInput) / 1e6;
  const floor = direct.billedUsd - reads;
  return (
    `${label}: floor for any compaction that keeps the latest exchange whole: ${usd(floor)} (${fmt(floor / direct.billedUsd, 2)}x the direct bill): ` +
    `the direct bill ${usd(direct.billedUsd)} less its cache reads ${usd(reads)}; what remains is each turn's new tokens and the output.`
  );
}

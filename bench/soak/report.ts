import { readFileSync, writeFileSync } from 'node:fs';
import { FLAT, type MemoryVerdict, type Verdict } from './judge.ts';
import { DOC_MINUTES, type SoakOptions } from './options.ts';
import { PRIMING_CALLS } from './prime.ts';
import type { RssSample } from './probes.ts';
import type { mappedGrowth } from './smaps.ts';
import type { Failed, LatencyStats, WindowRecord } from './recorder.ts';
import type { TrafficRun } from './run.ts';
import { MIX, SERIES } from './traffic.ts';

/** Everything a soak run wrote down: the JSON in bench/results/, and what the summary, the plot and the doc are made from. */
export interface SoakReport {
  date: string;
  node: string;
  machine: string;
  backend: string;
  options: SoakOptions;
  seconds: number;
  warmupS: number;
  population: { users: number; families: number; tenants: number };
  fakeBehaviour: Record<string, number>;
  traffic: TrafficRun;
  logCounts: Record<string, Record<string, number>>;
  notableLogLines: Record<string, string[]>;
  failureExamples: Failed[];
  verdict: Verdict;
  windows: WindowRecord[];
  rssSamples: RssSample[];
  /** Per service, what grew in its RSS between the two readings after a forced GC, by kind of mapping (smaps.ts), in KiB. */
  mappedGrowth?: Record<string, ReturnType<typeof mappedGrowth>>;
}

const ms = (x: number) => (Number.isNaN(x) ? '-' : x < 10 ? x.toFixed(2) : x < 100 ? x.toFixed(1) : x.toFixed(0));
const mib = (x: number) => x.toFixed(1);
const signed = (x: number) => `${x >= 0 ? '+' : ''}${x.toFixed(1)}`;

/** "RssAnon 120.1 → 130.2, RssFile ...": what moved inside the RSS, and V8's part of it. */
const partsText = (m: MemoryVerdict) =>
  Object.entries(m.parts)
    .map(([part, { warm, end }]) => `${part} ${mib(warm)} → ${mib(end)}`)
    .join(', ');

/** "31.2 → 31.9 MiB (+0.7)": a reading after the forced full GC, at the end of the warm-up and at the end. */
const gcText = (m: MemoryVerdict, which: 'liveMiB' | 'rssMiB') => {
  const { warm, end } = m.afterGc;
  return `${mib(warm[which])} → ${mib(end[which])} MiB (${signed(end[which] - warm[which])})`;
};

/** "[heap] +5.1, anonymous +2.0, file: gateway.sqlite-shm +0.3 MiB; most: 55d0c000 [heap] +5.1 MiB": the RSS growth after the GC by mapping. */
export function mappedText(report: SoakReport, name: string): string {
  const growth = report.mappedGrowth?.[name];
  if (!growth) return 'by mapping: not read';
  const kinds = Object.entries(growth.byKind)
    .filter(([, kib]) => Math.abs(kib) >= 64)
    .sort((a, b) => Math.abs(b[1]) - Math.abs(a[1]))
    .map(([kind, kib]) => `${kind} ${signed(kib / 1024)}`);
  const most = growth.mappings.slice(0, 3).map(([key, kib]) => `${key} +${(kib / 1024).toFixed(1)}`);
  return `by mapping (MiB): ${kinds.join(', ') || 'no change of 64 KiB or more'}; grew most: ${most.join(', ') || 'none'}`;
}

const serviceName = (name: string) => (name === 'auth' ? 'account service' : name);

/** For each service judged not flat, a sentence of what moved: where in the RSS, and V8's reserved heap at its highest after the warm-up. */
function notFlat(report: SoakReport): string[] {
  return Object.entries(report.verdict.memory)
    .filter(([, m]) => !m.flat)
    .map(([name, m]) => {
      const part = (key: keyof MemoryVerdict['parts']) => m.parts[key];
      const anon = part('RssAnon');
      const peak = report.windows
        .filter((w) => w.endS > report.warmupS)
        .reduce((best, w) => ((w.heapTotalMiB[name] ?? 0) > (best.heapTotalMiB[name] ?? 0) ? w : best));
      const heap = part('heap used (lowest)');
      const external = part('external');
      return (
        `After a full GC, the ${serviceName(name)}'s live memory went ${gcText(m, 'liveMiB')} and its RSS ${gcText(m, 'rssMiB')}. ` +
        `Under load its RSS grew by ${mib(m.growthMiB)} MiB after the warm-up, RssAnon by ${mib(anon.end - anon.warm)} MiB. ` +
        `Its lowest used heap went from ${mib(heap.warm)} to ${mib(heap.end)} MiB and its external memory from ${mib(external.warm)} to ` +
        `${mib(external.end)} MiB; V8's reserved heap rose to ${mib(peak.heapTotalMiB[name] ?? Number.NaN)} MiB ` +
        `(first read at ${Math.round(peak.endS)} s) and was ${mib(part('heap total').end)} MiB at the end. ` +
        `Its RSS after the GC, ${mappedText(report, name)}.`
      );
    });
}

/** One progress line per window. */
export function windowLine(w: WindowRecord): string {
  const lat = SERIES.filter((s) => w.latencyMs[s]).map((s) => `${s} ${ms(w.latencyMs[s]!.p50)}/${ms(w.latencyMs[s]!.p99)}`);
  const rss = Object.entries(w.rssMiB)
    .filter(([name]) => name === 'auth' || name === 'gateway')
    .map(([name, v]) => `${name} ${mib(v)}`);
  return `${Math.round(w.endS)} s: ${w.requests} requests, ${w.errors} errors; p50/p99 ms: ${lat.join(', ')}; RSS MiB: ${rss.join(', ')}`;
}

function latencyRows(report: SoakReport): { series: string; stats: LatencyStats; ttfb?: LatencyStats }[] {
  return SERIES.filter((s) => report.verdict.latencyMs[s]).map((s) => ({ series: s, stats: report.verdict.latencyMs[s]!, ttfb: report.verdict.ttfbMs[s] }));
}

/** The summary printed at the end of a run. */
export function summaryText(report: SoakReport): string {
  const v = report.verdict;
  const requests = report.windows.reduce((a, w) => a + w.requests, 0);
  const lines = [
    `Soak of ${report.seconds} s (warm-up ${report.warmupS} s), ${report.date}, ${report.machine}, Node ${report.node}; ${report.backend}`,
    `${requests} requests (${(requests / report.seconds).toFixed(1)}/s), ${v.errors} failed${report.traffic.skipped ? `; ${report.traffic.skipped} refreshes skipped (every family busy)` : ''}`,
    '',
    'after the warm-up    requests    p50 ms    p99 ms    max ms',
    ...latencyRows(report).map(({ series, stats, ttfb }) => {
      const row = `${series.padEnd(18)} ${String(stats.n).padStart(10)} ${ms(stats.p50).padStart(9)} ${ms(stats.p99).padStart(9)} ${ms(stats.max).padStart(9)}`;
      return ttfb ? `${row}   (first event: p50 ${ms(ttfb.p50)}, p99 ${ms(ttfb.p99)})` : row;
    }),
    '',
    ...Object.entries(v.memory).map(
      ([name, m]) =>
        `${name}: after a full GC, live ${gcText(m, 'liveMiB')} and RSS ${gcText(m, 'rssMiB')}: ${m.flat ? 'flat' : 'NOT FLAT'}\n` +
        `  under load: RSS ${mib(m.startMiB)} MiB at the start, ${mib(m.warmMiB)} MiB after the warm-up, ${mib(m.endMiB)} MiB at the end (${signed(m.growthMiB)} MiB; slope ${signed(m.slopeMiBPerMinute)} MiB/min)\n  ${partsText(m)}\n  after the GC, ${mappedText(report, name)}`,
    ),
    ...notFlat(report),
    '',
    `zero errors: ${v.zeroErrors ? 'PASS' : 'FAIL'} (${v.errors} failed requests; server error lines ${JSON.stringify(v.serverErrorLines)}; exit codes ${JSON.stringify(v.exitCodes)})`,
    `memory flat (after a full GC, live memory at most ${FLAT.maxLiveMiB} MiB and RSS at most ${FLAT.maxMiB} MiB above the end of the warm-up): ${v.memoryFlat ? 'PASS' : 'FAIL'}`,
  ];
  if (v.errors) {
    lines.push('', 'failures by kind:', ...Object.entries(v.errorsByKind).map(([k, n]) => `  ${k}: ${n}`));
    lines.push('first examples:', ...report.failureExamples.slice(0, 10).map((e) => `  ${e.atS.toFixed(1)} s ${e.kind}: ${e.detail}`));
  }
  return lines.join('\n');
}

/** The Soak section of docs/RELIABILITY.md, replaced in place (up to the next "## " heading) or appended. */
export function updateDoc(doc: URL, report: SoakReport): void {
  const text = readFileSync(doc, 'utf8');
  const section = soakSection(report);
  const start = text.indexOf('\n## Soak\n');
  if (start === -1) {
    writeFileSync(doc, `${text.trimEnd()}\n\n${section}`);
    return;
  }
  const next = text.indexOf('\n## ', start + 1);
  writeFileSync(doc, `${text.slice(0, start + 1)}${section}${next === -1 ? '' : `\n${text.slice(next + 1)}`}`);
}

const cell = (x: number) => ms(x);
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

function soakSection(report: SoakReport): string {
  const v = report.verdict;
  const requests = report.windows.reduce((a, w) => a + w.requests, 0);
  const minutes = report.options.minutes;
  const after = report.windows.filter((w) => w.endS > report.warmupS);
  const cores = (name: string) => mean(after.map((w) => w.cpuCores[name] ?? 0)).toFixed(2);
  const rest = mean(after.map((w) => w.cpuCores['rest of the machine'] ?? 0));
  const mixRows = MIX.map(
    (k) => `| ${k.name} | ${k.service === 'auth' ? 'account service' : 'gateway'} | ${k.perSecond * report.options.scale} | ${k.what} |`,
  );
  const latency = latencyRows(report).map(
    ({ series, stats, ttfb }) =>
      `| ${series} | ${stats.n} | ${cell(stats.p50)} | ${cell(stats.p99)} | ${cell(stats.max)} | ${ttfb ? `${cell(ttfb.p50)} / ${cell(ttfb.p99)}` : ''} |`,
  );
  const memory = Object.entries(v.memory).map(
    ([name, m]) =>
      `| ${serviceName(name)} | ${gcText(m, 'liveMiB')} | ${gcText(m, 'rssMiB')} | ${m.flat ? 'flat' : '**not flat**'} | ${mib(m.startMiB)} / ${mib(m.warmMiB)} / ${mib(m.endMiB)} (${signed(m.growthMiB)}) | ${signed(m.slopeMiBPerMinute)} | ${partsText(m)} |`,
  );
  const failures = Object.entries(v.errorsByKind).map(([k, n]) => `${k} ×${n}`);
  const fake = report.fakeBehaviour;
  const perSecond = Math.round(MIX.reduce((sum, k) => sum + k.perSecond, 0) * report.options.scale);
  return `## Soak
\`npm run soak -- --minutes ${minutes}\` (bench/soak/; about ${Math.ceil(minutes + 1)} minutes with setup). Unlike the sections
above, the soak is not a test: it is never run by \`npm test\` or CI. It takes minutes, and its figures depend on the
machine.

Both services run in their own processes from their entry points, as \`npm run start:auth\` and
\`npm run start:gateway\` start them (\`src/auth/main.ts\`, \`src/gateway/main.ts\`: migrations, workers, default log
level \`info\`); by default each on SQLite in a fresh directory, with rate limits, the response cache and dedup in
process (PostgreSQL and Redis: see the options below). The fake provider (tools/fake-provider) runs in a third process
and answers after ${fake['latencyMs']} ms; streams send ${fake['chunks']} events ${fake['chunkDelayMs']} ms apart.

Before the traffic: ${report.population.users} verified accounts, each signed in once with a personal access token;
${report.population.families} OAuth authorizations (a public client each, through the sign-in and consent pages); ${report.population.tenants} gateway
workspaces, each with its API key and an OpenAI key whose \`base_url\` is the fake (the first with limits, so each of
its calls is reserved and settled). Then a steady mix, each kind arriving as a Poisson process at its rate (open loop:
a slow answer does not slow the arrivals), about ${perSecond} requests a second in all:

| kind | service | per second | what |
|---|---|---|---|
${mixRows.join('\n')}

Every answer is checked: its status; the user's address in /v1/me and userinfo; fresh tokens of the right kind; a
gateway answer's text is the fake's echo of the very question asked (so a cached answer given to another question, or to
another workspace, fails), a stream ends with a stop, its usage and \`[DONE]\`; a new question must be an
\`X-Gateway-Cache: miss\` (a hit would be a false hit). Every ${report.options.windowSeconds} s window records the requests, the
failures by kind, p50 and p99 per series, each process's resident memory (VmRSS), each service's used heap
(\`nodejs_heap_size_used_bytes\` from its \`/metrics\`) and the cores each process used.

Verdicts:
- **Zero errors**: no request failed (an unexpected status, a network error or a 30 s timeout, an answer that fails its
  check), no service logged at level error or fatal or wrote to stderr, and each exited 0 on SIGTERM at the end. The
  warm-up counts too.
- **Memory flat**: judged on what a leak leaves and a garbage collection cannot take back. At the end of the warm-up
  and a second before the end of the run, the soak forces a full GC in each service (twice, through its inspector,
  \`HeapProfiler.collectGarbage\`: the services run with \`--inspect=127.0.0.1:0\`, which nothing else attaches to) and reads
  its \`/metrics\` at once. Its **live memory** (the used heap of V8's data spaces plus its external memory, which is
  what JavaScript objects hold; code spaces left out, as in the hostile-input suite) may grow by at most
  ${FLAT.maxLiveMiB} MiB, and its **RSS after that GC** (native memory too: SQLite's page cache, TLS, the allocator's arenas) by
  at most ${FLAT.maxMiB} MiB. The warm-up (30 % of the run, at most three minutes) holds the steepest start-up growth: JIT,
  connection pools, the heap growing towards its working size. Before the traffic, the gateway answers
  ${PRIMING_CALLS.toLocaleString('en-US')} priming calls (new questions, half streamed, 128 at a time; each checked, a failure counts as
  the run's): its threads' malloc arenas grow with the calls served until they hold what those threads allocate at once
  (at 800 calls a second, from 28 to 51 MiB within 30 s, then level), which at the soak's rate takes about half an hour
  and read as growth in the 30-minute run of 27 November 2026 (bench/soak/prime.ts). The gateway's in-process cache is set to 1 MiB
  (\`GATEWAY_CACHE_MAX_BYTES\`): its ring's pages are committed as it first fills, so at the default 64 MiB its filling
  would read as growth; at 1 MiB it is full within the warm-up. A fixed bound is stricter the longer the run: in a
  five-minute run, a leak of 1 KB per request would exceed ${FLAT.maxLiveMiB} MiB. Each forced GC pauses a service for tens of
  milliseconds, which the latencies of that second include.

  Reported beside it, not judged: the RSS under load (the median of its 1-second samples over the warm-up's last
  ${FLAT.edgeSeconds} s and the run's last ${FLAT.edgeSeconds} s), the slope of a least-squares fit over every sample after the warm-up, and
  what moved inside the RSS: RssAnon (the process's own memory) and RssFile (mapped files, the node binary among them)
  from /proc, and from /metrics the used heap (its lowest reading: a reading includes garbage not yet collected), V8's
  reserved heap (\`nodejs_heap_size_total_bytes\`) and the external memory (Buffers). Until November 2026 the verdict was
  the RSS under load, at most 8 MiB above the warm-up's: a 30-minute run failed it on the account service (+12.4 MiB)
  while that service's lowest used heap fell from 34.7 to 31.2 MiB. Under load the RSS also holds the heap V8 reserved
  for garbage not yet collected and keeps for minutes, so it measures where a GC cycle happens to be at either end as
  much as a leak; read after a forced full GC, it does not.

How to read a failed memory verdict: live memory that grows is a JavaScript leak (objects kept alive: a heap
snapshot of the process tells which). RSS after the GC that grows while live memory stays level is native memory
(SQLite's page cache, the allocator's arenas, TLS buffers). A longer run (\`--minutes 30\`) tells growth that stops from
growth that does not.

### Last run
${report.date}, ${report.machine}, Node ${report.node}; ${report.backend}.
${report.seconds} s of traffic, ${requests} requests (${(requests / report.seconds).toFixed(1)} a second), **${v.errors} failed**${failures.length ? ` (${failures.join(', ')})` : ''}. Zero errors: **${v.zeroErrors ? 'pass' : 'fail'}**; memory flat: **${v.memoryFlat ? 'pass' : 'fail'}**.

Latency after the warm-up (ms, from the send to the last byte of the answer; for streams also to the first event):

| series | requests | p50 | p99 | max | streams: first event p50 / p99 |
|---|---|---|---|---|---|
${latency.join('\n')}

A hit is answered from the response cache; a miss goes to the fake provider (its ${fake['latencyMs']} ms, or ${fake['latencyMs']! + fake['chunks']! * fake['chunkDelayMs']!} ms of stream, are in the
figure). \`dedup\` answers (a popular question already in flight) count as misses: they waited for the provider's answer.

Memory (MiB):

| service | after a full GC: live memory, warm-up → end | after a full GC: RSS, warm-up → end | verdict | under load: RSS at the start / after warm-up / at the end (growth) | slope per minute | parts under load, after warm-up → end |
|---|---|---|---|---|---|---|
${memory.join('\n')}
${notFlat(report)
  .map((line) => `\n${line}`)
  .join('')}

After the warm-up the account service used ${cores('auth')} of a core on average, the gateway ${cores('gateway')}, the fake
provider ${cores('fake provider')} and the soak's own process ${cores('soak')}; the rest of the machine (other work sharing it) used
${rest.toFixed(2)} of its ${report.machine.split(' ')[0]} cores${rest >= 0.25 ? ', which weighs on the p99s' : ''}.

![The soak over time: p50 and p99 per window of each kind of traffic, and each service's memory](soak.svg)

Options: \`--minutes\` (default 3, at most 60), \`--window\` (seconds, default 10), \`--scale\` (0.1 to 4), \`--seed\` (the arrivals
and choices are seeded, default 1). With \`AUTH_DATABASE_URL\`, \`GATEWAY_DATABASE_URL\` and/or \`REDIS_URL\` set, the
services use PostgreSQL and Redis instead (the databases must exist; the soak's accounts and workspaces have addresses
unique to the run, so a database can be reused). Every run writes its windows and samples to
\`bench/results/soak-<time>.json\` (not committed); runs of ${DOC_MINUTES} minutes or more also redraw \`docs/soak.svg\` and
rewrite this section, shorter ones draw \`bench/results/soak.svg\` and leave docs/ alone. Exit code 0 when both verdicts pass, 2 when one fails,
1 when the soak could not run.
`;
}

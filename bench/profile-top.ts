import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * The top costs of a benchmark in a CPU profile written by
 * `BENCH_CPU_PROF=<dir> npm run bench`:
 *
 *   node bench/profile-top.ts <dir>/CPU.….cpuprofile [me|userinfo|refresh] [--top N] [--grep REGEX]
 *
 * With a benchmark name, only the samples taken during that benchmark's
 * measured slices count (their windows are in bench/results/last-run.json, on
 * the monotonic clock V8 stamps its samples with). Prints the functions with
 * the most self time, then with the most total time (self + callees),
 * leaving out the time the thread spent off the CPU (see `cap` below);
 * --grep keeps the functions whose name or file match.
 */

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

type Windows = [number, number][];
/** The parts of bench/results/last-run.json read here. */
interface RawRun {
  totals: { me: { windows: Windows } };
  userinfo: { totals: { userinfo: { windows: Windows } } };
  refresh: { totals: { refresh: { windows: Windows } } };
}

const SECTIONS: Record<string, (raw: RawRun) => Windows> = {
  me: (raw) => raw.totals.me.windows,
  userinfo: (raw) => raw.userinfo.totals.userinfo.windows,
  refresh: (raw) => raw.refresh.totals.refresh.windows,
};

process.stdout.on('error', () => process.exit(0)); // a closed pipe (| head) is not an error
const args = process.argv.slice(2);
const topIndex = args.indexOf('--top');
const top = topIndex >= 0 ? Number(args.splice(topIndex, 2)[1]) : 25;
const grepIndex = args.indexOf('--grep');
const grep = grepIndex >= 0 ? new RegExp(args.splice(grepIndex, 2)[1] ?? '') : undefined;
const [file, section] = args;
if (!file || (section !== undefined && !SECTIONS[section])) {
  process.stderr.write(`usage: node bench/profile-top.ts <file.cpuprofile> [${Object.keys(SECTIONS).join('|')}] [--top N] [--grep REGEX]\n`);
  process.exit(2);
}
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
let windows: Windows = [[profile.startTime, profile.endTime]];
if (section) {
  const raw = JSON.parse(readFileSync(new URL('results/last-run.json', import.meta.url), 'utf8')) as RawRun;
  windows = SECTIONS[section]!(raw);
  const inside = windows.filter(([a, b]) => a >= profile.startTime && b <= profile.endTime);
  if (inside.length !== windows.length) {
    process.stderr.write('The windows of last-run.json are not inside this profile: is it from the same run?\n');
    process.exit(1);
  }
}

const root = fileURLToPath(new URL('../', import.meta.url));
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

function label(f: CallFrame): string {
  const name = f.functionName || '(anonymous)';
  if (!f.url) return name;
  let where = f.url.startsWith('file://') ? fileURLToPath(f.url) : f.url;
  if (where.startsWith(root)) where = where.slice(root.length);
  where = where.replace(/^.*node_modules\//, '');
  return `${name} ${where}:${f.lineNumber + 1}`;
}

// V8 takes a sample about every interval while the thread runs; a longer gap before a sample means the thread was off
// the CPU (preempted on a busy machine, or blocked in a system call), which would otherwise be charged to that sample.
const sortedDeltas = [...profile.timeDeltas].sort((a, b) => a - b);
const interval = sortedDeltas[Math.floor(sortedDeltas.length / 2)] ?? 1000;
const cap = 2 * interval;

const self = new Map<string, number>();
const total = new Map<string, number>();
let t = profile.startTime;
let counted = 0;
let offCpu = 0;
for (let i = 0; i < profile.samples.length; i++) {
  const dt = profile.timeDeltas[i] ?? 0;
  t += dt;
  if (!windows.some(([a, b]) => t >= a && t < b)) continue;
  const id = profile.samples[i]!;
  const node = byId.get(id)!;
  if (node.callFrame.functionName === '(idle)') continue;
  const w = Math.min(dt, cap);
  offCpu += dt - w;
  counted += w;
  const own = label(node.callFrame);
  self.set(own, (self.get(own) ?? 0) + w);
  const seen = new Set<string>();
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const l = label(byId.get(cur)!.callFrame);
    if (seen.has(l)) continue;
    seen.add(l);
    total.set(l, (total.get(l) ?? 0) + w);
  }
}

const print = (title: string, m: Map<string, number>) => {
  process.stdout.write(`\n${title}\n`);
  const rows = [...m].filter(([l]) => !grep || grep.test(l)).sort((a, b) => b[1] - a[1]);
  for (const [l, us] of rows.slice(0, top)) {
    process.stdout.write(`${(us / 1000).toFixed(0).padStart(7)} ms ${((100 * us) / counted).toFixed(1).padStart(5)} %  ${l}\n`);
  }
};
const seconds = windows.reduce((sum, [a, b]) => sum + (b - a), 0) / 1e6;
process.stdout.write(
  `${section ?? 'whole profile'}: ${seconds.toFixed(1)} s; busy ${(counted / 1e6).toFixed(1)} s (samples at most ${(cap / 1000).toFixed(1)} ms apart), ` +
    `${(offCpu / 1e6).toFixed(1)} s more in longer gaps (off the CPU: preempted or blocked), left out\n`,
);
print('Self time', self);
print('Total time (self + callees)', total);

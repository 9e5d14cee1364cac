import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { startServer } from './lib/children.ts';
import { load } from './lib/load.ts';

/**
 * The gateway's instructions per call, counted by valgrind's callgrind: a
 * measure of a change to the call path that this shared, noisy machine
 * cannot blur as much. Wall-clock A/B runs of benchmark 5's load swing by
 * 10 % and more between slices; on the same code, the main thread's counts
 * of two runs side by side differed by 0.3 % (641k and 643k instructions
 * per call) and, in a second pair, by 1.5 % (590k and 598k): a change
 * smaller than that needs several pairs.
 *
 *   node bench/instructions.ts [checkout ...]
 *
 * Each checkout (a directory holding this repository, with its
 * node_modules; default: this one) runs its bench/servers/gateway-server.ts
 * (every stage on, as in benchmark 5, or BENCH_GATEWAY_SETTINGS) under
 * callgrind, all at once, each against its own fake provider answering at
 * once. After INSTR_WARMUP calls (default 4000) the counters are zeroed,
 * INSTR_CALLS calls (default 2000) are sent on INSTR_CONNECTIONS
 * connections (default 10), every request new, and the counts are dumped.
 * Printed per checkout: the main thread's instructions per call (the event
 * loop that answers calls, whose CPU bounds the throughput), and all the
 * threads' (the usage and checkpoint threads and V8's helpers: these depend
 * on timing, batches and collections, and vary more).
 *
 * Instructions are not time: they leave out cache misses, system calls'
 * kernel work and waits. Under valgrind the process runs about 50 times
 * slower, so batching by time (usage batches, journal writes) differs from
 * a real run. It tells whether a change to the code made the main thread do
 * less, and how much; the benchmarks tell what that is worth. A change to
 * what crosses between threads is not counted fairly: valgrind runs one
 * thread at a time. Sending the usage thread its batch as an array of
 * strings, not one joined string, counted 7.6 % more instructions per
 * call on the main thread here, where the event loop's own time to hand a
 * batch over fell six-fold (src/gateway/usage/usage-thread.ts).
 */

const CALLS = Number(process.env['INSTR_CALLS'] ?? 2000);
const WARMUP = Number(process.env['INSTR_WARMUP'] ?? 4000);
const CONNECTIONS = Number(process.env['INSTR_CONNECTIONS'] ?? 10);

interface Count {
  checkout: string;
  calls: number;
  main: number;
  all: number;
}

try {
  execFileSync('valgrind', ['--version'], { stdio: 'ignore' });
} catch {
  console.error('bench/instructions.ts needs valgrind (Debian: apt-get install valgrind).');
  process.exit(1);
}

const checkouts = process.argv.length > 2 ? process.argv.slice(2).map((dir) => resolve(dir)) : [resolve(import.meta.dirname, '..')];
const counts = await Promise.all(checkouts.map(count));
for (const c of counts) {
  console.log(`${c.checkout}: ${c.calls} calls; main thread ${Math.round(c.main / c.calls)} instructions per call, all threads ${Math.round(c.all / c.calls)}`);
}
if (counts.length > 1) {
  const [first, ...rest] = counts;
  for (const c of rest) console.log(`${c.checkout} against ${first!.checkout}: main thread ${(((c.main / c.calls) / (first!.main / first!.calls) - 1) * 100).toFixed(2)} %`);
}

async function count(checkout: string): Promise<Count> {
  const fake = await startServer<{ url: string }>('fake provider', new URL('./servers/fake-provider.ts', import.meta.url), {
    FAKE_BEHAVIOUR: JSON.stringify({ latencyMs: 0 }),
  });
  const dir = mkdtempSync(join(tmpdir(), 'instructions-'));
  const settings = process.env['BENCH_GATEWAY_SETTINGS'];
  const gateway = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      // V8 writes and rewrites machine code at run time.
      '--smc-check=all-non-file',
      '--separate-threads=yes',
      `--callgrind-out-file=${join(dir, 'callgrind.out')}`,
      process.execPath,
      join(checkout, 'bench/servers/gateway-server.ts'),
    ],
    {
      env: { PATH: process.env['PATH'] ?? '', UPSTREAM_URL: fake.info.url, ...(settings ? { BENCH_GATEWAY_SETTINGS: settings } : {}) },
      // stdin a pipe from here, as bench/servers/lifecycle.ts expects: the server closes when it ends.
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
  let stderr = '';
  gateway.stderr!.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  try {
    const line = await new Promise<string>((ready, fail) => {
      createInterface({ input: gateway.stdout! }).once('line', ready);
      gateway.once('exit', (code) => fail(new Error(`${checkout}: the gateway exited (${code}) before it was ready:\n${stderr}`)));
    });
    const info = JSON.parse(line) as { url: string; apiKey: string; model: string };
    const options = {
      url: `${info.url}/v1/chat/completions`,
      method: 'POST' as const,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${info.apiKey}`, 'x-gateway-session-id': 'bench-session' },
      body: JSON.stringify({ model: info.model, messages: [{ role: 'user', content: 'Say hello, [<id>].' }] }),
      idReplacement: true,
      connections: CONNECTIONS,
      timeout: 120,
    };
    await load({ ...options, amount: WARMUP });
    execFileSync('callgrind_control', ['--zero', String(gateway.pid)], { stdio: 'ignore' });
    const { result } = await load({ ...options, amount: CALLS });
    execFileSync('callgrind_control', ['--dump=measured', String(gateway.pid)], { stdio: 'ignore' });
    if (result['2xx'] !== CALLS) throw new Error(`${checkout}: ${CALLS - result['2xx']} of ${CALLS} calls were not answered 2xx`);
    // One file per thread (…-01 is the first: the main thread), each with the instructions counted since the zero.
    let main = 0;
    let all = 0;
    for (const file of readdirSync(dir)) {
      const text = readFileSync(join(dir, file), 'utf8');
      if (!/^desc: Trigger: .*measured/m.test(text)) continue;
      const instructions = Number(/^(?:summary|totals): (\d+)/m.exec(text)?.[1] ?? 0);
      all += instructions;
      if (file.endsWith('-01')) main = instructions;
    }
    if (main === 0) throw new Error(`${checkout}: callgrind wrote no count for the main thread (${readdirSync(dir).join(', ')})`);
    return { checkout, calls: result['2xx'], main, all };
  } finally {
    gateway.kill('SIGKILL');
    await fake.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

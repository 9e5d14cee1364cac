import { setFlagsFromString } from 'node:v8';

let applied = false;

/**
 * V8 settings every service runs with, applied once per process when the
 * first service starts (V8 reads this one each time it reviews its
 * allocation sites, so it takes effect at once).
 *
 * Allocation-site pretenuring off. V8 watches how many objects of each
 * allocation site survive a minor GC and, past a threshold, allocates that
 * site's objects straight in the old generation. Under load a request's
 * objects are all in flight at some minor GC, so sites that build a
 * request's per-call objects get switched; those objects then die in the
 * old generation, where each minor GC still treats them as roots until
 * the next full GC, and everything young they point to (the request and
 * response, the answer, the next objects of the same kind) survives and is
 * promoted in turn. Measured on the gateway at 50 connections: with it, a
 * run either settled at about 0.3 MB promoted per minor GC or, in about
 * one run in three, at 6.5 to 7 MB and 12 to 15 ms per pause, for the
 * rest of the run; without it, 0.1 MB and 2 ms, and 25 to 40 % more calls
 * per second (bench/lib/report.ts, benchmark 5).
 *
 * The young generation keeps V8's own size (it can only be set when the
 * process starts: node --max-semi-space-size). Measured on the gateway at
 * benchmark 5's latency load (bench/ab.ts, one interleaved run each):
 * semi-spaces of 64 and 128 MiB cost 3 % and 9 % more CPU per call on the
 * main thread, and every size tried (1, 4, 64 and 128 MiB) read a worse
 * p99 than V8's own in the same run.
 */
export function applyV8Tuning(): void {
  if (applied) return;
  applied = true;
  setFlagsFromString('--no-allocation-site-pretenuring');
}

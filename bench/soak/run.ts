import { setTimeout as sleep } from 'node:timers/promises';
import { random as seededRandom } from '../corpus/session.ts';
import { Failure, type Origin } from './http.ts';
import type { Population } from './population.ts';
import type { Probes } from './probes.ts';
import type { Recorder } from './recorder.ts';
import { type Context, MIX, type Sent } from './traffic.ts';

/**
 * The traffic itself: every kind of the mix arrives as a Poisson process at
 * its rate (open loop: a slow answer does not slow the arrivals, as with
 * real users), from a seeded generator, for the given time; every
 * `windowSeconds` the recorder closes a window with the processes' figures.
 * Then the requests still in flight are let finish (at most 40 s) and the
 * last window is closed.
 */
export interface TrafficRun {
  /** Requests not sent because a refresh found every OAuth family busy (a client-side choice, not an error). */
  skipped: number;
  /** Requests still in flight after the drain (each is also counted as an error). */
  abandoned: number;
}

/** Beyond this many requests in flight the soak is not moderate any more: the next ones are counted as "client backlog" errors. */
const MAX_IN_FLIGHT = 256;


export async function runTraffic(
  setup: { auth: Origin; gateway: Origin; apiKey: string; population: Population; runId: string },
  options: { seconds: number; windowSeconds: number; scale: number; seed: number },
  recorder: Recorder,
  probes: Probes,
  onWindow: (index: number) => void,
): Promise<TrafficRun> {
  // A seeded generator: two runs with one seed send the same mix.
  const random = seededRandom(options.seed);
  let inFlight = 0;
  let skipped = 0;
  let serial = 0;
  const ctx: Context = {
    ...setup,
    random,
    nextSerial: () => serial++,
    async measure(kind: string, request: () => Promise<Sent> | undefined) {
      if (inFlight >= MAX_IN_FLIGHT) {
        recorder.fail(`${kind}: client backlog`, `${inFlight} requests in flight`);
        return;
      }
      const t0 = performance.now();
      const pending = request();
      if (!pending) {
        skipped++;
        return;
      }
      inFlight++;
      try {
        const sent = await pending;
        recorder.ok(sent.series, performance.now() - t0, sent.ttfbMs, sent.cache);
      } catch (err) {
        const failure = err instanceof Failure ? err : new Failure('unexpected', err instanceof Error ? (err.stack ?? err.message) : String(err));
        recorder.fail(`${kind}: ${failure.kind}`, failure.message);
      } finally {
        inFlight--;
      }
    },
  };

  const start = performance.now();
  const until = start + options.seconds * 1000;
  const arrivals = MIX.map(async (kind, index) => {
    // Each kind draws its gaps from its own generator: its arrivals do not depend on another kind's timing.
    const gaps = seededRandom(options.seed * 1000 + index + 1);
    const rate = kind.perSecond * options.scale;
    let next = start;
    for (;;) {
      next += (-Math.log(1 - gaps()) * 1000) / rate;
      if (next >= until) return;
      const wait = next - performance.now();
      if (wait > 0) await sleep(wait);
      void ctx.measure(kind.name, () => kind.send(ctx));
    }
  });

  probes.start();
  const windows = Math.round(options.seconds / options.windowSeconds);
  for (let i = 1; i < windows; i++) {
    const wait = start + i * options.windowSeconds * 1000 - performance.now();
    if (wait > 0) await sleep(wait);
    recorder.closeWindow(await probes.windowFigures());
    onWindow(i - 1);
  }
  await Promise.all(arrivals);
  const drainUntil = performance.now() + 40_000;
  while (inFlight > 0 && performance.now() < drainUntil) await sleep(20);
  const abandoned = inFlight;
  for (let i = 0; i < abandoned; i++) recorder.fail('drain: still in flight', 'no answer 40 s after the end of the run');
  recorder.closeWindow(await probes.windowFigures());
  onWindow(windows - 1);
  probes.stop();
  return { skipped, abandoned };
}

import type { Origin } from './http.ts';
import type { Tenant } from './population.ts';
import { cacheStatus, chatBody, checkCompletion, checkStream, pickQuestion } from './prompts.ts';

/**
 * Gateway calls sent before the soak's traffic starts, so that the
 * gateway's native memory is at its working size when the warm-up's reading
 * is taken. The threads' malloc arenas (V8's helper threads, libuv's pool,
 * the SQLite checkpoint thread) grow with the calls served until they hold
 * what those threads allocate at once, then stay level: measured on this
 * machine at 800 calls a second, from 28 to 51 MiB within the first 30 s
 * (about 24,000 calls), then flat for the 3.5 minutes that followed. At the
 * soak's 12 gateway calls a second that takes about half an hour, which the
 * 30-minute run of 27 November 2026 read as growth (+9.6 MiB in arenas, its
 * live memory flat). A leak grows with every call, primed or not: the run
 * after the priming still sends some 19,000 gateway calls in 27 minutes.
 */
export const PRIMING_CALLS = 25_000;
const CONCURRENCY = 128;

/** Sends `calls` new questions (half streamed) to the gateway, `CONCURRENCY` at a time; each answer is checked as the soak checks it. Resolves with how many failed and the first failure. */
export async function primeGateway(gateway: Origin, tenants: readonly Tenant[], runId: string, calls = PRIMING_CALLS): Promise<{ failed: number; first?: string }> {
  let next = 0;
  let failed = 0;
  let first: string | undefined;
  const random = () => 0.5; // with a popular share of 0: every priming call is a new question, a miss that goes upstream
  async function worker(): Promise<void> {
    while (next < calls) {
      const i = next++;
      const stream = i % 2 === 1;
      const tenant = tenants[i % tenants.length]!;
      const question = pickQuestion(random, 0, i, `${runId}-prime`);
      try {
        const answer = await gateway.expect(
          200,
          'POST',
          '/v1/chat/completions',
          { 'content-type': 'application/json', authorization: `Bearer ${tenant.apiKey}` },
          chatBody(question, stream),
        );
        cacheStatus(answer, question);
        if (stream) checkStream(answer, question);
        else checkCompletion(answer, question);
      } catch (err) {
        failed++;
        first ??= String((err as Error).message ?? err);
      }
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, () => worker()));
  return first === undefined ? { failed } : { failed, first };
}

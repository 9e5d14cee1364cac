import { once } from 'node:events';
import { Worker } from 'node:worker_threads';

/**
 * Runs `body` (statements ending in `return <value>`, with each of `modules`
 * imported under its name) in a worker thread, and resolves with the value,
 * or rejects once `ms` have passed. For tests of work that must be linear in
 * its input: a quadratic path then fails at the deadline instead of holding
 * the test's own thread (whose timers could not fire) for minutes or hours.
 */
export async function withinDeadline<T>(what: string, ms: number, modules: Record<string, URL>, body: string): Promise<T> {
  const imports = Object.entries(modules)
    .map(([name, url]) => `const ${name} = await import(${JSON.stringify(url.href)});`)
    .join('\n');
  const worker = new Worker(
    `const { parentPort } = require('node:worker_threads');
    (async () => {
      ${imports}
      return (async () => { ${body} })();
    })().then((value) => parentPort.postMessage({ value }), (err) => parentPort.postMessage({ error: String(err?.stack ?? err) }));`,
    { eval: true },
  );
  let deadline: NodeJS.Timeout | undefined;
  try {
    const [answer] = (await Promise.race([
      once(worker, 'message'),
      new Promise<never>((_, reject) => {
        deadline = setTimeout(() => reject(new Error(`${what}: not done within ${ms / 1000} s`)), ms);
      }),
    ])) as [{ value?: T; error?: string }];
    if (answer.error !== undefined) throw new Error(`${what}: ${answer.error}`);
    return answer.value as T;
  } finally {
    clearTimeout(deadline);
    await worker.terminate();
  }
}

/** A module of the source tree, for withinDeadline. */
export const source = (path: string): URL => new URL(`../../src/${path}`, import.meta.url);

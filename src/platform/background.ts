import type { Logger } from 'pino';

/**
 * Work a request starts but does not wait for, so that its reply cannot tell
 * (by content or by timing) what the work found. Each task's failure is
 * logged, never thrown at the caller; `settled()` resolves when every task
 * started so far has finished, which graceful shutdown awaits before closing
 * the database (and tests await before asserting that nothing was queued).
 */
export interface BackgroundWork {
  run(name: string, task: () => Promise<void>): void;
  settled(): Promise<void>;
}

export function backgroundWork(log: Logger): BackgroundWork {
  const running = new Set<Promise<void>>();
  return {
    run(name, task) {
      const p: Promise<void> = Promise.resolve()
        .then(task)
        .catch((err: unknown) => log.error({ err, task: name }, 'background task failed'))
        .finally(() => running.delete(p));
      running.add(p);
    },
    async settled() {
      while (running.size > 0) await Promise.allSettled([...running]);
    },
  };
}

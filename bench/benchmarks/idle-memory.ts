import { fmt, log } from '../lib/format.ts';
import { measureIdleRss } from '../lib/idle-rss.ts';
import type { Row } from '../lib/report.ts';

/**
 * Each service's resident memory when idle: started as `npm run start:*`
 * and `npm start` run them (SQLite in a fresh DATA_DIR, nothing else
 * configured), read 2 s after its ready line. The baseline is an idle Node
 * process running TypeScript, measured in the same run.
 */
const ENTRIES = [
  { name: 'account service alone (npm run start:auth)', entry: 'src/auth/main.ts', ready: /account service listening on/ },
  { name: 'gateway alone (npm run start:gateway)', entry: 'src/gateway/main.ts', ready: /AI gateway listening on/ },
  { name: 'both in one process (npm start)', entry: 'src/main.ts', ready: /AI gateway listening on/ },
];

export async function idleMemory(idleNodeTsMiB: number): Promise<{ rows: Row[]; raw: Record<string, number> }> {
  const rows: Row[] = [];
  const raw: Record<string, number> = {};
  for (const { name, entry, ready } of ENTRIES) {
    log(`memory: idle RSS of ${entry}`);
    const { rssBytes } = await measureIdleRss({ entry, ready, env: { AUTH_PORT: '0', GATEWAY_PORT: '0', LOG_LEVEL: 'info' } });
    const mib = rssBytes / 2 ** 20;
    raw[entry] = mib;
    rows.push({
      id: '6',
      benchmark: `idle RSS, ${name}`,
      measured: `${fmt(mib, 0)} MiB`,
      baseline: `idle Node (TypeScript) ${fmt(idleNodeTsMiB, 0)} MiB`,
      result: `+${fmt(mib - idleNodeTsMiB, 0)} MiB`,
      target: 'none (measured)',
      pass: true,
      verdict: 'info',
    });
  }
  return { rows, raw };
}

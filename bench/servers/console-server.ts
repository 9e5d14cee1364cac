import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import { createApiKey } from '../../src/gateway/control-plane/api-keys.ts';
import { loadGatewayConfig } from '../../src/gateway/config.ts';
import { createGatewayService } from '../../src/gateway/service.ts';
import { signup } from '../../src/gateway/control-plane/tenants.ts';
import { generateUsage, MAIN_TENANT, OTHER_TENANTS, type SeededTenant } from '../lib/console-seed.ts';
import { announce, closeWhenTold } from './lifecycle.ts';

/**
 * The real gateway on the console benchmark's database
 * (bench/benchmarks/console-pages.ts), configured like `npm run
 * start:gateway` (DATA_DIR, or GATEWAY_DATABASE_URL for PostgreSQL, from
 * the parent; LOG_LEVEL=warn). Two modes (BENCH_CONSOLE_MODE):
 * - `seed`: signs the tenants up and makes their API keys through the domain
 *   functions, then writes every usage record of bench/lib/console-seed.ts
 *   through the gateway's own usage writer (`record`, then `flush` every
 *   5,000: whatever else that writer maintains is maintained), closes, and
 *   prints one JSON line: the tenants, the landmarks, the seeding time.
 * - `serve` (default): listens, prints {"url"} and answers the parent's
 *   question "memory" over IPC (process.memoryUsage(), after a full GC when
 *   started with --expose-gc). Its emails go to the SMTP server the
 *   parent names (SMTP_*), where the bench reads the sign-in link.
 */
const mode = process.env['BENCH_CONSOLE_MODE'] ?? 'serve';
const config = loadGatewayConfig({
  LOG_LEVEL: 'warn',
  ...process.env,
  GATEWAY_HOST: '127.0.0.1',
  GATEWAY_PORT: '0',
  GATEWAY_LIMIT_SIGNUP: '100/60',
  // Seeding writes through the usage writer without its crash journal (nothing to recover from a bench).
  ...(mode === 'seed' ? { GATEWAY_USAGE_JOURNAL_DIR: 'off' } : {}),
});
const service = await createGatewayService(config);
const { deps } = service;

if (mode === 'seed') {
  // The parent holds the other end of stdin: gone (killed, or over its time limit), so is this seeding.
  process.stdin.on('end', () => process.exit(1));
  process.stdin.resume();
  const tenants: SeededTenant[] = [];
  for (const spec of [MAIN_TENANT, ...OTHER_TENANTS]) {
    const made = await signup(deps, { name: spec.name, email: spec.email, ip: '127.0.0.1', adminToken: undefined });
    // As its owner would by the emailed link: the benchmark signs in to this workspace by magic link (docs/console.md).
    await deps.db.updateTable('tenants').set({ email_confirmed_at: Date.now() }).where('id', '=', made.tenantId).execute();
    const keyIds = [made.apiKeyId];
    for (let i = 1; i < spec.keys; i++) keyIds.push((await createApiKey(deps, made.tenantId, `agent key ${i}`)).id);
    tenants.push({ spec, tenantId: made.tenantId, keyIds });
  }
  const writer = service.dataPlane.usage;
  const total = tenants.reduce((n, t) => n + t.spec.records, 0);
  const seededAt = Date.now();
  const started = performance.now();
  let written = 0;
  let lastLog = started;
  const landmarks = await generateUsage(
    tenants,
    seededAt,
    (row) => {
      writer.record(row);
      written++;
    },
    async () => {
      await writer.flush();
      if (performance.now() - lastLog > 15_000) {
        lastLog = performance.now();
        const s = (lastLog - started) / 1000;
        process.stderr.write(`console seed: ${written} of ${total} records in ${s.toFixed(0)} s (${Math.round(written / s)}/s)\n`);
      }
    },
  );
  const seconds = (performance.now() - started) / 1000;
  // PostgreSQL's autovacuum analyzes a table this grown by itself, soon after; done here at once so that every run plans alike.
  // SQLite gathers no statistics unless told to, and the gateway never tells it: left as a deployment would have it.
  let analyzeSeconds = 0;
  if (deps.dialect === 'postgres') {
    const t = performance.now();
    await sql`analyze`.execute(deps.db);
    analyzeSeconds = (performance.now() - t) / 1000;
  }
  await service.close();
  process.stdin.destroy();
  announce({
    seededAt,
    seconds,
    analyzeSeconds,
    records: total,
    tenant: { id: tenants[0]!.tenantId, email: MAIN_TENANT.email, keyIds: tenants[0]!.keyIds },
    landmarks,
  });
  process.exit(0);
}

service.runtime.startWorkers();
await service.runtime.listen(config.host, config.port);
closeWhenTold(() => service.close());
announce({ url: `http://127.0.0.1:${(service.runtime.app.server.address() as AddressInfo).port}` });

// The parent's question over IPC: "memory", process.memoryUsage() after a full GC when started with --expose-gc.
process.on('message', (question) => {
  if (question !== 'memory') return;
  (globalThis as { gc?: () => void }).gc?.();
  process.send?.(process.memoryUsage());
});

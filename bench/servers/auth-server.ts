import { mkdtempSync, rmSync } from 'node:fs';
import { sql } from 'kysely';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { register, verifyEmail } from '../../src/auth/accounts.ts';
import { loadAuthConfig } from '../../src/auth/config.ts';
import { createAuthService } from '../../src/auth/service.ts';
import { openBody } from '../../src/platform/mail.ts';
import type { AuthInfo } from './auth-info.ts';
import { announce, closeWhenTold } from './lifecycle.ts';
import { stallMeter } from './stall-meter.ts';

/**
 * The real account service for the benchmarks, configured from the
 * environment like `npm run start:auth` (the parent passes DATA_DIR,
 * AUTH_API_KEY, AUTH_LIMIT_LOGIN, LOG_LEVEL; SMTP unset, so mail goes to the
 * log transport; OAuth is on when the parent passes OAUTH_CLIENT_ID and the
 * rest). Before listening it creates one verified account through the
 * domain functions: register, then the token from the verification email's
 * text in the outbox (opened with the service's key), then verifyEmail.
 * Listens on 127.0.0.1, a free port, which is also the issuer (AUTH_BASE_URL:
 * the OAuth pages redirect to it), and prints {"url","apiKey","email","password"}.
 */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

const ownDir = process.env['DATA_DIR'] ? undefined : mkdtempSync(join(tmpdir(), 'auth-bench-'));
const port = await freePort();
const config = loadAuthConfig({
  LOG_LEVEL: 'warn',
  ...process.env,
  ...(ownDir ? { DATA_DIR: ownDir } : {}),
  AUTH_HOST: '127.0.0.1',
  AUTH_PORT: String(port),
  AUTH_BASE_URL: `http://127.0.0.1:${port}`,
});
const service = await createAuthService(config);
const { deps } = service;

const email = 'bench@example.com';
const password = 'bench password 0123456789';
await register(deps, { email, password, ip: '127.0.0.1' });
const mail = await deps.db
  .selectFrom('outbox')
  .select(['id', 'text_body'])
  .where('recipient', '=', email)
  .where('kind', '=', 'verify_email')
  .executeTakeFirstOrThrow();
const text = openBody([config.encryptionKey], mail.id, 'text', mail.text_body);
const token = /[?&]token=([^\s&]+)/.exec(text)?.[1];
if (!token) throw new Error(`no verification link in: ${text}`);
await verifyEmail(deps, decodeURIComponent(token));

service.startWorkers();
await service.app.listen({ host: config.host, port: config.port });
closeWhenTold(async () => {
  await service.close();
  if (ownDir) rmSync(ownDir, { recursive: true, force: true });
});
// The parent's questions over IPC. "db-writes": rows inserted, updated or deleted so far on the service's
// one SQLite write connection (SQLite's total_changes(): every statement of every request runs on it).
// "stalls": what held up this process's event loop since the last "stalls" (see stallMeter).
const stalls = stallMeter();
process.on('message', (question) => {
  if (question === 'db-writes') {
    void sql<{ n: number }>`select total_changes() as n`.execute(deps.db).then(({ rows }) => process.send?.({ rows: Number(rows[0]?.n) }));
  } else if (question === 'stalls') {
    process.send?.(stalls.takeReading());
  }
});
const url = `http://127.0.0.1:${(service.app.server.address() as AddressInfo).port}`;
const info: AuthInfo = { url, apiKey: config.apiKey, email, password };
announce({ ...info });

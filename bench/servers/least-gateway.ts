import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync, type SQLInputValue } from 'node:sqlite';
import { Pool } from 'undici';
import { gatewayMigrations } from '../../src/gateway/migrations.ts';
import { sha256, uuidV7 } from '../../src/platform/crypto.ts';
import { migrateToLatest, openDatabase } from '../../src/platform/db.ts';
import { announce, closeWhenTold } from './lifecycle.ts';

/**
 * The least a gateway can do per call and still keep a usage record of
 * each: the Node floor (node:http, an undici Pool) plus what no gateway of
 * this kind can skip, and nothing else (no framework, no pipeline stage, no
 * journal, no rollups, no metrics). Per call: the body read and parsed,
 * the sk-gw- key hashed (SHA-256) and looked up in memory, the request sent
 * upstream re-serialized with the provider's model name, the answer read
 * and parsed (its usage, to price it), the answer sent with ten X-Gateway-*
 * headers, and one row queued for the gateway's own usage_records table
 * (its migrations applied, so the same columns and indexes), written 512 at
 * a time in one transaction of 64-row prepared inserts, on this thread.
 * The breakdown benchmark measures it beside the floor: what is left of
 * the floor's throughput before any of the gateway's own work; and with
 * LEAST_GATEWAY_RECORDS=off, without the usage record (the record's share).
 * Prints {"url","apiKey","model"} when listening.
 */
const API_KEY = 'sk-gw-least';
const RECORDS = process.env['LEAST_GATEWAY_RECORDS'] !== 'off';
const dir = mkdtempSync(join(tmpdir(), 'least-gateway-'));
const path = join(dir, 'gateway.sqlite');
const { db } = await openDatabase<unknown>({ sqlitePath: path });
await migrateToLatest(db, gatewayMigrations);
await db.destroy();

const COLUMNS = [
  'request_id', 'tenant_id', 'key_id', 'session_id', 'model_requested', 'model_used', 'provider', 'status', 'stream',
  'prompt_tokens', 'cached_tokens', 'cache_write_tokens', 'completion_tokens', 'reasoning_tokens', 'saved_tokens',
  'cost_usd', 'cost_saved_usd', 'cache_status', 'compaction', 'overhead_ms', 'upstream_ms', 'created_at',
];
const ROWS_PER_INSERT = 64;
const ROWS_PER_TRANSACTION = 512;
const sqlite = new DatabaseSync(path);
sqlite.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;');
const tuple = `(${COLUMNS.map(() => '?').join(', ')})`;
const insert = sqlite.prepare(
  `INSERT INTO usage_records (${COLUMNS.join(', ')}) VALUES ${Array(ROWS_PER_INSERT).fill(tuple).join(', ')} ON CONFLICT (request_id) DO NOTHING`,
);
let queued: SQLInputValue[][] = [];
function writeQueued(): void {
  sqlite.exec('BEGIN IMMEDIATE');
  for (let at = 0; at + ROWS_PER_INSERT <= queued.length; at += ROWS_PER_INSERT) insert.run(...queued.slice(at, at + ROWS_PER_INSERT).flat());
  sqlite.exec('COMMIT');
  queued = [];
}

const keys = new Map([[sha256(API_KEY), { tenantId: 'tenant', keyId: 'key' }]]);
const PRICE_IN = 0.15 / 1e6;
const PRICE_OUT = 0.6 / 1e6;
const pool = new Pool(new URL(process.env['UPSTREAM_URL']!).origin, { connections: 256 });

async function answer(req: IncomingMessage, res: ServerResponse, raw: string): Promise<void> {
  const started = performance.now();
  const principal = keys.get(sha256((req.headers.authorization ?? '').replace(/^Bearer /, '')));
  if (!principal) {
    res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":{"code":"invalid_api_key"}}');
    return;
  }
  const body = JSON.parse(raw) as { model: string; stream?: boolean };
  const requested = body.model;
  body.model = requested.slice(requested.indexOf('/') + 1);
  const sent = performance.now();
  const upstream = await pool.request({
    path: '/v1/chat/completions',
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench-fake' },
    body: JSON.stringify(body),
  });
  const text = await upstream.body.text();
  const upstreamMs = performance.now() - sent;
  const usage = (JSON.parse(text) as { usage: { prompt_tokens: number; completion_tokens: number } }).usage;
  const cost = usage.prompt_tokens * PRICE_IN + usage.completion_tokens * PRICE_OUT;
  const id = uuidV7();
  const overheadMs = performance.now() - started - upstreamMs;
  res.writeHead(upstream.statusCode, {
    'content-type': 'application/json; charset=utf-8',
    'x-gateway-request-id': id,
    'x-gateway-model': requested,
    'x-gateway-provider': 'openai',
    'x-gateway-cache': 'miss',
    'x-gateway-tokens-saved': '0',
    'x-gateway-compaction': 'none',
    'x-gateway-cost': cost.toFixed(7),
    'x-gateway-cost-saved': '0',
    'x-gateway-overhead-ms': overheadMs.toFixed(2),
    'x-request-id': id,
  });
  res.end(text);
  if (!RECORDS) return;
  queued.push([
    id, principal.tenantId, principal.keyId, req.headers['x-gateway-session-id'] as string | undefined ?? null, requested, requested, 'openai',
    upstream.statusCode, body.stream ? 1 : 0, usage.prompt_tokens, 0, 0, usage.completion_tokens, 0, 0, cost, 0, 'miss', 'none',
    overheadMs, upstreamMs, Date.now(),
  ]);
  if (queued.length >= ROWS_PER_TRANSACTION) writeQueued();
}

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    answer(req, res, Buffer.concat(chunks).toString('utf8')).catch((err: Error) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: err.message } }));
    });
  });
});
server.listen(0, '127.0.0.1', () =>
  announce({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, apiKey: API_KEY, model: 'openai/gpt-4o-mini' }),
);
closeWhenTold(async () => {
  server.close();
  server.closeAllConnections();
  await pool.close();
  sqlite.close();
  rmSync(dir, { recursive: true, force: true });
});

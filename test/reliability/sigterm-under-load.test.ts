import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { DatabaseSync } from 'node:sqlite';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { createFakeProvider } from '../../tools/fake-provider/server.ts';
import { freePort } from '../helpers/auth.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CALLS = 24;

/**
 * Issue 9, faults: SIGTERM while the gateway (its own process, as `npm run
 * start:gateway` runs it) is answering a load of calls, half of them
 * streamed, each still upstream. Every call it had accepted finishes
 * whole, every one of them has its usage record in the database after the
 * exit (the writer's interval is set to a minute here: only its flush at
 * close can have written them), the process exits 0, and a call after the signal is refused at
 * once rather than left hanging.
 */
test('SIGTERM under load: accepted calls and streams finish whole, each one has its usage record, the process exits 0', { timeout: 60_000 }, async (t) => {
  const fake = await createFakeProvider({ behaviour: { text: 'one two three four five six', latencyMs: 600, chunkDelayMs: 60 } });
  const dataDir = mkdtempSync(join(tmpdir(), 'sigterm-'));
  t.after(async () => {
    await fake.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const port = await freePort();
  const child = spawn(process.execPath, ['src/gateway/main.ts'], {
    cwd: ROOT,
    env: { PATH: process.env['PATH'] ?? '', DATA_DIR: dataDir, GATEWAY_PORT: String(port), GATEWAY_ALLOW_PRIVATE_UPSTREAMS: '127.0.0.1', GATEWAY_USAGE_FLUSH_MS: '60000', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d) => {
    stderr += d;
  });
  const exited = once(child, 'exit');
  t.after(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line.includes('listening')) resolve();
    });
    void exited.then(() => reject(new Error(`exited before listening: ${stderr}`)));
  });
  const base = `http://127.0.0.1:${port}`;
  const signup = await fetch(`${base}/api/v1/signup`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Load', email: 'load@example.com' }) });
  assert.equal(signup.status, 201);
  const { session_token: session, api_key: apiKey } = (await signup.json()) as { session_token: string; api_key: string };
  const stored = await fetch(`${base}/api/v1/tenant/provider-keys`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${session}` },
    body: JSON.stringify({ provider: 'openai', key: 'sk-fake-provider-key', base_url: `${fake.url}/v1` }),
  });
  assert.equal(stored.status, 201);

  const openai = new OpenAI({ apiKey, baseURL: `${base}/v1`, maxRetries: 0 });
  const calls = Array.from({ length: CALLS }, async (_, i) => {
    const messages = [{ role: 'user' as const, content: `call ${i}` }];
    if (i % 2 === 0) {
      const { data, response } = await openai.chat.completions.create({ model: 'openai/gpt-4o-mini', messages }).withResponse();
      return { requestId: response.headers.get('x-request-id'), text: data.choices[0]?.message.content ?? '', finished: data.choices[0]?.finish_reason };
    }
    const { data: stream, response } = await openai.chat.completions.create({ model: 'openai/gpt-4o-mini', messages, stream: true }).withResponse();
    let text = '';
    let finished: string | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finished = chunk.choices[0]?.finish_reason ?? finished;
    }
    return { requestId: response.headers.get('x-request-id'), text, finished };
  });
  // Every call is upstream (the fake answers after 600 ms) when the signal arrives.
  for (let waited = 0; fake.calls.count < CALLS; waited += 10) {
    assert.ok(waited < 10_000, `only ${fake.calls.count} calls reached the provider`);
    await new Promise((r) => setTimeout(r, 10));
  }
  child.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 100));
  const late = await fetch(`${base}/v1/models`, { headers: { authorization: `Bearer ${apiKey}` }, signal: AbortSignal.timeout(5000) }).then(
    (r) => r.status,
    (err: Error) => err.name,
  );
  assert.ok(late === 503 || late === 'TypeError', `a call after SIGTERM is refused at once (got ${late})`);

  const answered = await Promise.all(calls);
  for (const a of answered) {
    assert.equal(a.text, 'one two three four five six', 'the answer is whole');
    assert.equal(a.finished, 'stop');
    assert.ok(a.requestId);
  }
  const [code] = await exited;
  assert.equal(code, 0, `exit code; stderr: ${stderr}`);

  const db = new DatabaseSync(join(dataDir, 'gateway.sqlite'), { readOnly: true });
  try {
    const rows = db.prepare("SELECT request_id, status, stream FROM usage_records WHERE model_requested = 'openai/gpt-4o-mini'").all() as { request_id: string; status: number; stream: number }[];
    const byId = new Map(rows.map((r) => [r.request_id, r]));
    for (const a of answered) assert.equal(byId.get(a.requestId!)?.status, 200, `usage record of ${a.requestId}`);
    assert.equal(rows.filter((r) => r.stream === 1).length, CALLS / 2);
  } finally {
    db.close();
  }
});

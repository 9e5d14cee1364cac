import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, type TestContext, test } from 'node:test';
import type { RecordedCall } from '../tools/fake-provider/server.ts';
import { type LiveGateway, type LiveTenant, startLiveGateway, usageRecord } from '../test/helpers/gateway-service.ts';
import { type ClaudeCli, type ClaudeRun, installClaudeCode, runClaude } from './claude-code-cli.ts';
import { type Exchange, startRecorder } from './recorder.ts';

/**
 * The real Claude Code CLI, non-interactive (`claude -p ... --output-format
 * json`), through one agent turn in which it calls its own Read tool on a
 * file of its working directory and answers from it. The fake provider
 * plays the model (behaviour `agent`: call Read on the file, then answer
 * quoting the tool result; `thinking`: signed thinking blocks, checked when
 * they come back). First directly against the fake (what the CLI sends),
 * then through the gateway with both ways the CLI authenticates, a
 * recording proxy between the CLI and the gateway keeping what the CLI sent
 * so that it can be compared with what the provider received.
 */

const PROMPT = 'read notes.txt and tell me the code word';

/** Every field the gateway may change on the way to an Anthropic provider: cache_control (the prompt-caching stage may add one breakpoint where the client left room); nothing else in a session this short. */
const withoutCacheControl = (value: unknown) => JSON.parse(JSON.stringify(value, (key, v) => (key === 'cache_control' ? undefined : v)));

/** Where the request's cache_control blocks are, as paths (system.1, messages.0.content.7, tools.3), with their values; a walk with its own stack. */
function breakpoints(body: Record<string, unknown>): Map<string, string> {
  const found = new Map<string, string>();
  const stack: [string, unknown][] = [['', body]];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const [path, value] = next;
    if (value === null || typeof value !== 'object') continue;
    for (const [k, v] of Object.entries(value)) {
      if (k === 'cache_control' && !Array.isArray(value)) found.set(path, JSON.stringify(v));
      else stack.push([path === '' ? k : `${path}.${k}`, v]);
    }
  }
  return found;
}

const messageCalls = (calls: readonly RecordedCall[]) => calls.filter((c) => c.route === 'anthropic.messages');
const messageExchanges = (exchanges: readonly Exchange[]) => exchanges.filter((e) => e.method === 'POST' && e.url.split('?')[0] === '/v1/messages');
type Body = { messages: { role: string; content: unknown }[]; [k: string]: unknown };

describe('Claude Code CLI, one agent turn with its Read tool', () => {
  let cli: ClaudeCli;
  let gw: LiveGateway;
  let tenant: LiveTenant;
  let work: string;
  let notes: string;
  let codeWord: string;

  before(async () => {
    cli = await installClaudeCode();
    gw = await startLiveGateway('sqlite');
    tenant = await gw.tenant({ providers: ['anthropic'] });
    work = await realpath(await mkdtemp(join(tmpdir(), 'claude-work-')));
    notes = join(work, 'notes.txt');
    codeWord = `PELICAN-${randomInt(1e5, 1e6)}`;
    await writeFile(notes, `Meeting notes.\nThe code word is ${codeWord}.\n`);
  });
  beforeEach(() => {
    gw.fake.reset();
    gw.fake.setBehaviour({ agent: { tool: 'Read', input: { file_path: notes }, answer: 'The file says:' }, thinking: 'The user wants a file read; I will read it.' });
  });
  after(async () => {
    await gw?.close();
    if (work) await rm(work, { recursive: true, force: true });
  });

  /** The CLI finished the turn, answered with the code word, and the provider got the file's content back in a tool_result. */
  function assertAgentTurn(run: ClaudeRun, calls: readonly RecordedCall[], exchanges: readonly Exchange[] = []): void {
    const seen = exchanges.map((e) => `${e.method} ${e.url} -> ${e.status}`).join('; ');
    assert.equal(run.code, 0, `claude exited ${run.code}: ${run.stderr.slice(0, 2000)} ${run.stdout.slice(0, 2000)} [${seen}]`);
    assert.equal(run.json?.is_error, false, `${run.stdout.slice(0, 2000)} [${seen}]`);
    assert.equal(run.json.subtype, 'success');
    assert.match(run.json.result, new RegExp(`The file says: .*The code word is ${codeWord}`, 's'));
    const withResult = messageCalls(calls).filter((c) => {
      const last = (c.body as Body).messages.findLast((m) => m.role === 'user');
      return Array.isArray(last?.content) && last.content.some((b: { type?: string; content?: unknown }) => b.type === 'tool_result' && JSON.stringify(b.content).includes(codeWord));
    });
    assert.equal(withResult.length, 1, 'the provider received the tool_result with the file content once');
  }

  /** What Claude Code sends, checked by name (the list in tools/fake-provider/README.md), and reported as a diagnostic for other versions. */
  function assertClaudeCodeShape(t: TestContext, call: RecordedCall, run: ClaudeRun): void {
    const body = call.body as Body;
    const h = call.headers;
    t.diagnostic(
      JSON.stringify({
        url: call.url,
        betas: h['anthropic-beta'],
        userAgent: h['user-agent'],
        fields: Object.keys(body),
        thinking: body['thinking'],
        context_management: body['context_management'],
        output_config: body['output_config'],
        max_tokens: body['max_tokens'],
        roles: body.messages.map((m) => m.role),
        deferred: (body['tools'] as { name: string; defer_loading?: boolean }[]).filter((t) => t.defer_loading).map((t) => t.name),
        breakpoints: [...breakpoints(body).keys()],
      }),
    );
    assert.match(call.url, /^\/v1\/messages\?beta=true$/);
    assert.match(String(h['user-agent']), new RegExp(`^claude-cli/${cli.version.replaceAll('.', '\\.')} `));
    assert.equal(h['x-claude-code-session-id'], run.json.session_id);
    assert.match(String(h['anthropic-beta']), /(^|,)claude-code-\d{8}(,|$)/);
    assert.equal(body['stream'], true);
    assert.ok((body['tools'] as { name: string }[]).some((t) => t.name === 'Read'));
    assert.ok(breakpoints(body).size >= 1 && breakpoints(body).size <= 4);
  }

  test('directly against the fake provider: it reads the file with Read and answers with the code word', async (t) => {
    const run = await runClaude(cli, { prompt: PROMPT, cwd: work, baseUrl: gw.fake.url, auth: { apiKey: 'sk-ant-direct' } });
    assertAgentTurn(run, gw.fake.calls.recent);
    const calls = messageCalls(gw.fake.calls.recent);
    assert.equal(calls.length, 2, 'one request for the tool call, one for the answer');
    for (const call of calls) assertClaudeCodeShape(t, call, run);
    // The signed thinking block came back with the tool_use it preceded (the fake refuses a changed or dropped one).
    const assistant = (calls[1]!.body as Body).messages.find((m) => m.role === 'assistant');
    assert.ok(Array.isArray(assistant?.content));
    assert.equal((assistant.content as { type: string }[])[0]?.type, 'thinking');
  });

  for (const auth of ['apiKey', 'authToken'] as const) {
    test(`through the gateway (${auth === 'apiKey' ? 'ANTHROPIC_API_KEY: x-api-key' : 'ANTHROPIC_AUTH_TOKEN: Bearer'}): same turn, every request recorded, the provider receives what the CLI sent`, async (t) => {
      const recorder = await startRecorder(gw.url);
      try {
        const run = await runClaude(cli, { prompt: PROMPT, cwd: work, baseUrl: recorder.url, auth: auth === 'apiKey' ? { apiKey: tenant.apiKey } : { authToken: tenant.apiKey } });
        assertAgentTurn(run, gw.fake.calls.recent, recorder.exchanges);
        const sent = messageExchanges(recorder.exchanges);
        const received = messageCalls(gw.fake.calls.recent);
        assert.equal(received.length, sent.length, 'each request the CLI sent reached the provider once');
        assert.ok(sent.length >= 2);

        for (const [i, exchange] of sent.entries()) {
          // The CLI authenticated as it was told to, with the gateway key.
          if (auth === 'apiKey') assert.equal(exchange.headers['x-api-key'], tenant.apiKey);
          else assert.equal(exchange.headers.authorization, `Bearer ${tenant.apiKey}`);
          // Through the gateway: it answered, and recorded the call under this tenant's key and the CLI's session.
          assert.equal(exchange.status, 200);
          const requestId = exchange.responseHeaders?.['x-gateway-request-id'];
          assert.equal(typeof requestId, 'string', 'X-Gateway-Request-Id on every answer');
          const row = await usageRecord(gw, requestId as string);
          assert.equal(row.key_id, tenant.apiKeyId);
          assert.equal(row.session_id, exchange.headers['x-claude-code-session-id']);

          const call = received[i]!;
          const client = JSON.parse(exchange.body) as Body;
          const provider = call.body as Body;
          // The provider's own headers, as the CLI sent them; the tenant's provider key, never the gateway key.
          assert.equal(call.headers['anthropic-beta'], exchange.headers['anthropic-beta']);
          assert.equal(call.headers['anthropic-version'], exchange.headers['anthropic-version']);
          assert.equal(call.headers['x-api-key'] ?? call.headers.authorization?.replace(/^Bearer /, ''), tenant.providerKeys['anthropic']);
          assert.ok(!JSON.stringify(call.headers).includes(tenant.apiKey));
          // Every field, in the CLI's order, unknown ones included; cache_control only ever added to (at most 4 in all).
          assert.deepEqual(Object.keys(provider), Object.keys(client));
          assert.deepEqual(withoutCacheControl(provider), withoutCacheControl(client));
          const clientBreakpoints = breakpoints(client);
          const providerBreakpoints = breakpoints(provider);
          for (const [path, value] of clientBreakpoints) assert.equal(providerBreakpoints.get(path), value, `the CLI's breakpoint at ${path} kept`);
          assert.ok(providerBreakpoints.size <= 4);
          t.diagnostic(`request ${i}: ${JSON.stringify(provider) === JSON.stringify(client) ? 'the parsed body serializes identically to what the CLI sent' : `breakpoints added at ${[...providerBreakpoints.keys()].filter((p) => !clientBreakpoints.has(p)).join(', ')}`}`);
        }
      } finally {
        await recorder.close();
      }
    });
  }
});

import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, type TestContext, test } from 'node:test';
import type { RecordedCall } from '../tools/fake-provider/server.ts';
import { type LiveGateway, type LiveTenant, startLiveGateway, usageRecord } from '../test/helpers/gateway-service.ts';
import { type CodexCli, type CodexRun, installCodex, runCodex } from './codex-cli.ts';
import { type Exchange, startRecorder } from './recorder.ts';

/**
 * The real Codex CLI, non-interactive (`codex exec --json`), through one
 * agent turn in which it runs its shell tool (`exec_command`) on a file of
 * its working directory and answers from the output. The fake provider
 * plays the model (behaviour `agent`: call exec_command with `cat
 * notes.txt`, then answer quoting the function_call_output; `thinking`: a
 * reasoning item with encrypted_content, checked when it comes back). First
 * directly against the fake (what the CLI sends), then through the gateway,
 * a recording proxy between the CLI and the gateway keeping what the CLI
 * sent so that it can be compared with what the provider received.
 */

const PROMPT = 'read notes.txt and tell me the code word';
/** A model of the catalog served by OpenAI (Codex sends whatever its config names). */
const MODEL = 'gpt-5';

type Item = { type?: string; role?: string; id?: unknown; output?: unknown; encrypted_content?: unknown };
type Body = { input: Item[]; tools: { type: string; name?: string }[]; [k: string]: unknown };

const responsesCalls = (calls: readonly RecordedCall[]) => calls.filter((c) => c.route === 'openai.responses');
const responsesExchanges = (exchanges: readonly Exchange[]) => exchanges.filter((e) => e.method === 'POST' && e.url.split('?')[0] === '/v1/responses');

describe('Codex CLI, one agent turn with its exec_command tool', () => {
  let cli: CodexCli;
  let gw: LiveGateway;
  let tenant: LiveTenant;
  let work: string;
  let codeWord: string;

  before(async () => {
    cli = await installCodex();
    gw = await startLiveGateway('sqlite');
    tenant = await gw.tenant({ providers: ['openai'] });
    work = await realpath(await mkdtemp(join(tmpdir(), 'codex-work-')));
    codeWord = `PELICAN-${randomInt(1e5, 1e6)}`;
    await writeFile(join(work, 'notes.txt'), `Meeting notes.\nThe code word is ${codeWord}.\n`);
  });
  beforeEach(() => {
    gw.fake.reset();
    gw.fake.setBehaviour({ agent: { tool: 'exec_command', input: { cmd: 'cat notes.txt' }, answer: 'The file says:' }, thinking: 'The user wants a file read; I will read it.' });
  });
  after(async () => {
    await gw?.close();
    if (work) await rm(work, { recursive: true, force: true });
  });

  /** The CLI finished the turn: the shell tool ran `cat notes.txt`, its output reached the provider as a function_call_output, and the answer quotes it. */
  function assertAgentTurn(run: CodexRun, calls: readonly RecordedCall[], exchanges: readonly Exchange[] = []): void {
    const seen = exchanges.map((e) => `${e.method} ${e.url} -> ${e.status}`).join('; ');
    assert.equal(run.code, 0, `codex exited ${run.code}: ${run.stderr.slice(0, 2000)} ${run.stdout.slice(0, 2000)} [${seen}]`);
    const commands = run.events.filter((e) => e.type === 'item.completed' && e.item?.type === 'command_execution');
    assert.equal(commands.length, 1, `one command ran: ${run.stdout.slice(0, 2000)}`);
    assert.match(commands[0]!.item.command, /cat notes\.txt/);
    assert.equal(commands[0]!.item.exit_code, 0);
    assert.match(commands[0]!.item.aggregated_output, new RegExp(`The code word is ${codeWord}`));
    assert.match(run.answer ?? '', new RegExp(`^The file says: .*The code word is ${codeWord}`, 's'), `${run.stdout.slice(0, 2000)} [${seen}]`);
    const withOutput = responsesCalls(calls).filter((c) => (c.body as Body).input.some((i) => i.type === 'function_call_output' && JSON.stringify(i.output).includes(codeWord)));
    assert.equal(withOutput.length, 1, 'the provider received the function_call_output with the file content once');
  }

  /** What Codex sends, checked by name (the list in tools/fake-provider/README.md), and reported as a diagnostic for other versions. */
  function assertCodexShape(t: TestContext, call: RecordedCall, run: CodexRun): void {
    const body = call.body as Body;
    const h = call.headers;
    t.diagnostic(
      JSON.stringify({
        url: call.url,
        userAgent: h['user-agent'],
        originator: h['originator'],
        headers: Object.keys(h).sort(),
        fields: Object.keys(body),
        reasoning: body['reasoning'],
        include: body['include'],
        tools: body.tools.map((tool) => `${tool.type}${tool.name ? `:${tool.name}` : ''}`),
        input: body.input.map((i) => `${i.type ?? 'message'}${i.role ? `:${i.role}` : ''}`),
      }),
    );
    assert.equal(call.url, '/v1/responses');
    assert.match(String(h['user-agent']), new RegExp(`^codex_exec/${cli.version.replaceAll('.', '\\.')} `));
    assert.equal(h['originator'], 'codex_exec');
    assert.equal(typeof run.threadId, 'string');
    assert.equal(h['session-id'], run.threadId);
    assert.equal(typeof h['thread-id'], 'string');
    assert.equal(typeof h['x-client-request-id'], 'string');
    assert.equal(body['model'], MODEL);
    assert.equal(body['stream'], true);
    assert.equal(body['store'], false);
    assert.deepEqual(body['include'], ['reasoning.encrypted_content']);
    assert.equal(body['prompt_cache_key'], run.threadId);
    assert.deepEqual(body['reasoning'], { summary: 'auto' });
    assert.equal(body['instructions'], undefined, 'the system prompt comes as developer messages');
    assert.equal(body.input[0]?.role, 'developer');
    assert.equal(typeof body['client_metadata'], 'object');
    assert.ok(body.tools.some((tool) => tool.type === 'function' && tool.name === 'exec_command'));
    for (const item of body.input) assert.equal(typeof item.id, 'string', 'input items carry their ids');
  }

  test('directly against the fake provider: it runs `cat notes.txt` with exec_command and answers with the code word', async (t) => {
    const run = await runCodex(cli, { prompt: PROMPT, cwd: work, baseUrl: `${gw.fake.url}/v1`, apiKey: 'sk-direct', model: MODEL });
    assertAgentTurn(run, gw.fake.calls.recent);
    const calls = responsesCalls(gw.fake.calls.recent);
    assert.equal(calls.length, 2, 'one request for the tool call, one for the answer');
    for (const call of calls) assertCodexShape(t, call, run);
    // Stateless (store: false), Codex sends the reasoning item back with the encrypted_content the fake sealed (a changed one is a 400).
    const reasoning = (calls[1]!.body as Body).input.filter((i) => i.type === 'reasoning');
    assert.equal(reasoning.length, 1);
    assert.match(String(reasoning[0]!.encrypted_content), /^fakeenc1\./);
  });

  test('through the gateway: same turn, both requests reach the provider as Codex sent them, each recorded under the tenant key, surface responses and the session-id header', async (t) => {
    const recorder = await startRecorder(gw.url);
    try {
      const run = await runCodex(cli, { prompt: PROMPT, cwd: work, baseUrl: `${recorder.url}/v1`, apiKey: tenant.apiKey, model: MODEL });
      assertAgentTurn(run, gw.fake.calls.recent, recorder.exchanges);
      const sent = responsesExchanges(recorder.exchanges);
      const received = responsesCalls(gw.fake.calls.recent);
      assert.equal(sent.length, 2, 'one request for the tool call, one for the answer');
      assert.equal(received.length, sent.length, 'each request the CLI sent reached the provider once');

      for (const [i, exchange] of sent.entries()) {
        assert.equal(exchange.headers.authorization, `Bearer ${tenant.apiKey}`);
        // Through the gateway: it answered, and recorded the call under this tenant's key, the Responses surface and Codex's session.
        assert.equal(exchange.status, 200);
        const requestId = exchange.responseHeaders?.['x-gateway-request-id'];
        assert.equal(typeof requestId, 'string', 'X-Gateway-Request-Id on every answer');
        const row = await usageRecord(gw, requestId as string);
        assert.equal(row.key_id, tenant.apiKeyId);
        assert.equal(row.surface, 'responses');
        assert.equal(row.session_id, exchange.headers['session-id']);
        assert.equal(row.session_id, run.threadId);

        const call = received[i]!;
        const client = JSON.parse(exchange.body) as Body;
        // The tenant's provider key upstream, never the gateway key.
        assert.equal(call.headers.authorization, `Bearer ${tenant.providerKeys['openai']}`);
        assert.ok(!JSON.stringify(call.headers).includes(tenant.apiKey));
        // OpenAI to OpenAI with no stage acting: the client's own request, every field in its order (store: false as
        // sent, include, prompt_cache_key, client_metadata, tools of types function, namespace and web_search, item ids).
        assert.deepEqual(Object.keys(call.body as Body), Object.keys(client));
        assert.deepEqual(call.body, client);
        t.diagnostic(`request ${i}: ${JSON.stringify(call.body) === JSON.stringify(client) ? 'the parsed body serializes identically to what the CLI sent' : 'the parsed body differs in serialization only'}`);
      }
      const rows = await gw.service.deps.db.selectFrom('usage_records').select(['surface']).where('session_id', '=', run.threadId!).execute();
      assert.deepEqual(
        rows.map((r) => r.surface),
        ['responses', 'responses'],
        'two calls in the session',
      );
    } finally {
      await recorder.close();
    }
  });
});

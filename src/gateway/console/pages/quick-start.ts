import type { FastifyRequest } from 'fastify';
import { escapeHtml } from '../../../platform/html.ts';
import type { App } from '../../../platform/http.ts';
import { listedModels } from '../../catalog/catalog.ts';
import type { GatewayConfig } from '../../config.ts';
import { AUTO_MODEL } from '../../routing/auto-model.ts';
import { listProviderKeys } from '../../control-plane/provider-keys.ts';
import type { ConsoleContext } from '../console.ts';
import { renderPage, sendConsolePage } from '../layout.ts';

/** The environment variable the snippets read the key from: a key is never written into a page. */
const KEY_VARIABLE = 'GATEWAY_API_KEY';
/** A host as a browser sends it: a name or IPv4 address, or a bracketed IPv6 address, and an optional port. */
const PLAIN_HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})|\[[0-9A-Fa-f:.]{2,45}\])(?::\d{1,5})?$/;

/**
 * Quick start: copy-ready calls (curl, the OpenAI SDK for Python and for
 * TypeScript) with this gateway's URL, a model the workspace's provider keys
 * can call, the X-Gateway-* request headers worth knowing and how to read
 * the response's. The API key is an environment variable in every snippet.
 */
export async function quickStartPage(app: App, ctx: ConsoleContext): Promise<void> {
  app.get('/quick-start', { schema: { hide: true } }, async (request, reply) => {
    const { tenantId } = ctx.session(request);
    const providerKeys = await listProviderKeys(ctx.deps, tenantId);
    const model = firstModel(providerKeys.map((k) => k.provider));
    const base = `${gatewayOrigin(ctx.deps.config, request)}/v1`;
    const snippets = [
      { id: 'curl', title: 'curl', code: curlSnippet(base, model) },
      { id: 'python', title: 'Python (openai)', code: pythonSnippet(base, model) },
      { id: 'typescript', title: 'TypeScript or Node (openai)', code: typescriptSnippet(base, model) },
    ];
    const body = `<h1>Quick start</h1>
      <p>The gateway speaks the OpenAI API: point any OpenAI SDK or tool at <code class="wrap" id="base-url">${escapeHtml(base)}</code> and send one of this workspace’s API keys.</p>
      <section aria-labelledby="before-title" class="panel">
        <h2 id="before-title">Before the first call</h2>
        <ol class="steps">
          <li>${providerKeys.length > 0 ? `<a href="/provider-keys">Provider keys</a>: ${providerKeys.length} stored.` : '<a href="/provider-keys">Add a provider key</a>: the gateway calls each provider with your own key.'}</li>
          <li><a href="/api-keys">Create an API key</a> (it is shown once), and keep it in your environment, never in your code: <code>export ${KEY_VARIABLE}=sk-gw-…</code></li>
        </ol>
        <p class="muted">The snippets call <code>${escapeHtml(model)}</code>${model === AUTO_MODEL ? ', which lets the gateway choose among the models your provider keys can call' : ', one of the models your first provider key can call; <code>auto</code> lets the gateway choose'}.</p>
      </section>
      ${snippets.map(snippetSection).join('')}
      ${requestHeaders()}
      ${responseHeaders()}`;
    return sendConsolePage(reply, 200, renderPage(await ctx.signedInFrame(request, 'Quick start', 'quick-start'), body));
  });
}

/**
 * GATEWAY_BASE_URL when the operator set it, else the origin the browser
 * used (its protocol as the request saw it, behind a trusted proxy its
 * X-Forwarded-Proto, and its Host). A Host header is the client's to write,
 * which is acceptable here: this page is only shown to the signed-in person
 * whose browser sent it, and the URL is only displayed, never fetched or
 * linked to, escaped, and only a plain host[:port] is used (anything else
 * shows a placeholder). The development default (http://localhost:<port>,
 * GATEWAY_BASE_URL unset) is not taken for set: the browser's origin is
 * the better guess there (a gateway reached by another name, or on port 0).
 */
function gatewayOrigin(config: GatewayConfig, request: FastifyRequest): string {
  if (config.baseUrl && config.baseUrl !== `http://localhost:${config.port}`) return new URL(config.baseUrl).href.replace(/\/+$/, '');
  const protocol = request.protocol === 'https' ? 'https' : 'http';
  return PLAIN_HOST.test(request.host) ? `${protocol}://${request.host}` : `${protocol}://your-gateway-host`;
}

/** The lightest, then cheapest, catalog model of the first provider key (by provider id) that has any; else `auto`. */
function firstModel(providers: readonly string[]): string {
  for (const provider of providers) {
    const models = listedModels(new Set([provider])).toSorted((a, b) => a.tier - b.tier || a.input + a.output - (b.input + b.output));
    if (models[0]) return `${provider}/${models[0].id}`;
  }
  return AUTO_MODEL;
}

function snippetSection(s: { id: string; title: string; code: string }): string {
  return `<section aria-labelledby="${s.id}-title" class="snippet">
    <h2 id="${s.id}-title">${escapeHtml(s.title)}</h2>
    <pre id="snippet-${s.id}" tabindex="0"><code>${escapeHtml(s.code)}</code></pre>
    <button type="button" class="copy secondary" data-copy="snippet-${s.id}" data-copy-status="snippet-${s.id}-status" hidden>Copy ${escapeHtml(s.title)}</button>
    <p id="snippet-${s.id}-status" class="copy-status" aria-live="polite"></p>
  </section>`;
}

const js = (text: string) => JSON.stringify(text);

function curlSnippet(base: string, model: string): string {
  const body = JSON.stringify({ model, messages: [{ role: 'user', content: 'Say hello in five words.' }] });
  return `# -i prints the response headers (X-Gateway-Cost, X-Gateway-Cache, ...) before the answer.
curl -i "${base}/chat/completions" \\
  -H "Authorization: Bearer $${KEY_VARIABLE}" \\
  -H "Content-Type: application/json" \\
  -H "X-Gateway-Session-Id: quick-start-1" \\
  -H "X-Gateway-Tag: quick-start" \\
  -d '${body}'`;
}

function pythonSnippet(base: string, model: string): string {
  return `# pip install openai
import os
from openai import OpenAI

client = OpenAI(base_url=${js(base)}, api_key=os.environ[${js(KEY_VARIABLE)}])

raw = client.chat.completions.with_raw_response.create(
    model=${js(model)},
    messages=[{"role": "user", "content": "Say hello in five words."}],
    extra_headers={"X-Gateway-Session-Id": "quick-start-1", "X-Gateway-Tag": "quick-start"},
)
completion = raw.parse()
print(completion.choices[0].message.content)
print("model:", raw.headers.get("x-gateway-model"), "cost (USD):", raw.headers.get("x-gateway-cost"),
      "cache:", raw.headers.get("x-gateway-cache"))`;
}

function typescriptSnippet(base: string, model: string): string {
  return `// npm install openai
import OpenAI from 'openai';

const client = new OpenAI({ baseURL: ${js(base)}, apiKey: process.env.${KEY_VARIABLE} });

const { data, response } = await client.chat.completions
  .create(
    { model: ${js(model)}, messages: [{ role: 'user', content: 'Say hello in five words.' }] },
    { headers: { 'X-Gateway-Session-Id': 'quick-start-1', 'X-Gateway-Tag': 'quick-start' } },
  )
  .withResponse();
console.log(data.choices[0]?.message.content);
console.log('model:', response.headers.get('x-gateway-model'), 'cost (USD):', response.headers.get('x-gateway-cost'),
  'cache:', response.headers.get('x-gateway-cache'));`;
}

/** A header table inside a wrapper that scrolls on a phone. */
function headerTable(id: string, caption: string, rows: readonly [string, string][]): string {
  return `<div class="headers-scroll" role="region" aria-labelledby="${id}-caption" tabindex="0"><table class="header-table">
    <caption id="${id}-caption">${escapeHtml(caption)}</caption>
    <thead><tr><th scope="col">Header</th><th scope="col">What it does</th></tr></thead>
    <tbody>${rows.map(([h, what]) => `<tr><th scope="row"><code>${escapeHtml(h)}</code></th><td>${escapeHtml(what)}</td></tr>`).join('')}</tbody>
  </table></div>`;
}

function requestHeaders(): string {
  return `<section aria-labelledby="request-headers-title">
    <h2 id="request-headers-title">Headers you can send</h2>
    ${headerTable('request-headers', 'Request headers the gateway reads (any other value is refused with 400 invalid_header)', [
      ['X-Gateway-Session-Id: <id>', 'Groups a conversation’s calls (1 to 128 printable ASCII characters): the usage and request log filter by it, routing keeps the conversation on one model, and provider prompt caching turns on.'],
      ['X-Gateway-Tag: <tag>', 'A label of yours (1 to 128 printable ASCII characters), e.g. a feature or customer, to filter and group usage by.'],
      ['X-Gateway-No-Cache: true', 'Neither read nor write the response cache, and do not join an identical call in flight.'],
      ['X-Gateway-Compact: off | safe | agent | aggressive | <tokens>', 'This call’s prompt compaction, over the workspace’s default (Settings).'],
      ['X-Gateway-No-Route: true', 'Call exactly the model named: no routing, no fallback (retries still happen). Not with model auto.'],
      ['X-Gateway-Prompt-Cache: on | off', 'Provider prompt-cache hints for this call, over the workspace’s setting.'],
    ])}
  </section>`;
}

function responseHeaders(): string {
  return `<section aria-labelledby="response-headers-title">
    <h2 id="response-headers-title">Reading the answer’s headers</h2>
    <p>Every answer carries these; the snippets above print some of them. On a stream the cost is not known when the headers leave: <code>X-Gateway-Cost</code> says <code>pending</code>, and the final figures are in the usage chunk (with <code>stream_options: {"include_usage": true}</code>, as <code>usage.cost</code>) and in the request log.</p>
    ${headerTable('response-headers', 'Response headers the gateway adds', [
      ['X-Gateway-Request-Id', 'The call’s id, the key of its entry in the request log.'],
      ['X-Gateway-Model', 'The provider/model that answered (a fallback’s, when one answered).'],
      ['X-Gateway-Provider', 'The provider that answered.'],
      ['X-Gateway-Cost', 'USD at the catalog’s prices; 0 on a cache hit; unknown for a model the catalog does not list; pending on streams.'],
      ['X-Gateway-Cost-Saved', 'USD saved on this call: cache, compaction, routing and provider prompt caching together.'],
      ['X-Gateway-Cache', 'miss, hit (from the response cache), dedup (joined an identical call in flight), bypass, or partial (embeddings: some inputs from the cache).'],
      ['X-Gateway-Cache-Age', 'On a hit: the age of the cached answer, in seconds.'],
      ['X-Gateway-Tokens-Saved', 'Tokens not paid for: a hit’s, and the prompt tokens compaction removed.'],
      ['X-Gateway-Compaction', 'The compaction strategies applied, or none.'],
      ['X-Gateway-Route-Reason', 'When routing chose the model: why.'],
      ['X-Gateway-Attempts', 'When there was more than one upstream try (retries, fallbacks): how many.'],
      ['X-Gateway-Overhead-Ms', 'The gateway’s own time before the answer started, the provider’s excluded.'],
    ])}
  </section>`;
}

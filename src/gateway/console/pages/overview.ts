import type { App } from '../../../platform/http.ts';
import { listApiKeys } from '../../api-keys.ts';
import { listProviderKeys } from '../../provider-keys.ts';
import type { ConsoleContext } from '../console.ts';
import { renderPage, sendConsolePage } from '../layout.ts';

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/**
 * GET /: where a sign-in lands. For now the two steps a workspace needs
 * before its first call, each with its state; usage charts come here with
 * the Usage page.
 */
export async function overviewPage(app: App, ctx: ConsoleContext): Promise<void> {
  app.get('/', { schema: { hide: true } }, async (request, reply) => {
    const { tenantId } = ctx.session(request);
    const [providerKeys, apiKeys] = await Promise.all([listProviderKeys(ctx.deps, tenantId), listApiKeys(ctx.deps, tenantId)]);
    const step = (done: boolean, text: string) => `<li><span class="state ${done ? 'done' : 'todo'}">${done ? 'Done' : 'To do'}</span> ${text}</li>`;
    const body = `<h1>Overview</h1>
      <section aria-labelledby="start-title" class="panel">
        <h2 id="start-title">Before the first call</h2>
        <ol class="steps">
          ${step(providerKeys.length > 0, `<a href="/provider-keys">Provider keys</a>: ${plural(providerKeys.length, 'key', 'keys')} stored. The gateway calls each provider with your own key.`)}
          ${step(apiKeys.length > 0, `<a href="/api-keys">API keys</a>: ${plural(apiKeys.length, 'live key', 'live keys')}. Your programs send one as <code>Authorization: Bearer sk-gw-…</code> to this gateway's <code>/v1</code>.`)}
        </ol>
      </section>
      <p class="muted">Usage charts, the request log and the workspace's settings are coming to this console.</p>`;
    return sendConsolePage(reply, 200, renderPage(await ctx.signedInFrame(request, 'Overview', 'overview'), body));
  });
}

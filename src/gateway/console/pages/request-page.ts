import type { FastifyReply, FastifyRequest } from 'fastify';
import { escapeHtml } from '../../../platform/html.ts';
import { getRequest, type RequestDetail, requestLogKeys } from '../../usage/request-log.ts';
import { getTenant } from '../../control-plane/tenants.ts';
import type { GatewayConfig } from '../../config.ts';
import type { ConsoleContext } from '../console.ts';
import { attempt } from '../forms.ts';
import { renderPage, sendConsolePage } from '../layout.ts';
import { count, isOk, logLink, ms, none, statusBadge, usd, utc } from './request-format.ts';

/** Bodies are shown up to this many characters (pretty-printed); the API returns them whole. */
const SHOWN_BODY_CHARS = 256 * 1024;
/** Bodies up to this size are parsed to be pretty-printed; larger ones are shown as stored. */
const PARSED_BODY_CHARS = 2 * 1024 * 1024;

const COMPACTION: Record<string, string> = {
  whitespace: 'whitespace: line endings, trailing spaces and runs of blank lines in tool outputs and assistant text',
  repeats: 'repeats: a tool output or assistant text identical to an earlier one, replaced by a pointer to it',
  'superseded-reads': 'superseded-reads: an earlier read of a file replaced by a pointer to a later read of it',
  'stale-results': 'stale-results: the oldest tool results cleared past the prompt size set, each replaced by a note naming its call',
  'tool-output': 'tool-output: the middle of a long tool output cut, its head and tail kept',
  'drop-turns': 'drop-turns: the oldest middle turns dropped (each tool call with its results) to fit the token budget',
};

const FAILED_MISS = 'Miss: looked up and not found; the call failed, so nothing was stored (errors are never cached).';

const CACHE: Record<string, string> = {
  hit: 'Hit: answered from the response cache; no provider was called and nothing was paid for.',
  dedup: 'Dedup: an identical call was in flight; this one was answered with its answer, and only that one was paid for.',
  miss: 'Miss: looked up and not found; the provider answered (and a complete answer was stored for the next identical call).',
  bypass: 'Bypass: the cache was not used (X-Gateway-No-Cache, the cache turned off for this workspace, or a call that never reached it).',
  partial: 'Partial: an embeddings call whose inputs were answered in part from the cache; only the others were sent to the provider and paid for.',
};

/**
 * One request's page: what each stage of the pipeline did (cache,
 * compaction, routing, attempts and fallbacks), what it cost and saved, its
 * tokens and latency, and its bodies when the workspace keeps them. Another
 * workspace's request id is "not found", as an unknown one is.
 */
export async function requestPage(ctx: ConsoleContext, request: FastifyRequest, reply: FastifyReply, id: string): Promise<FastifyReply> {
  const { tenantId } = ctx.session(request);
  const [found, tenant, keys] = await Promise.all([attempt(() => getRequest(ctx.deps, tenantId, id)), getTenant(ctx.deps, tenantId), requestLogKeys(ctx.deps, tenantId)]);
  if (!found.ok) {
    const days = Math.round(ctx.deps.config.usage.retentionMs / 86_400_000);
    const body = `<h1>Request not found</h1>
      <p class="form-error" role="alert">No request <code>${escapeHtml(id)}</code> in this workspace. Records are kept ${days} days; a request id of another workspace is not found either.</p>
      <p><a href="/requests">Back to the request log</a></p>`;
    return sendConsolePage(reply, found.status, renderPage(await ctx.signedInFrame(request, 'Request not found', 'requests'), body));
  }
  const r = found.value;
  const key = keys.find((k) => k.id === r.key_id);
  const keyName = key ? `${key.name} (${key.prefix}…${key.revoked_at ? ', revoked' : ''})` : r.key_id;
  const body = `<p class="back"><a href="/requests">Request log</a></p>
    <h1 class="wrap">Request <code>${escapeHtml(r.request_id)}</code></h1>
    <dl class="facts summary">
      <dt>Time</dt><dd>${utc(r.created_at, true)} UTC</dd>
      <dt>Status</dt><dd>${statusBadge(r, true)}</dd>
      <dt>Answer</dt><dd>${r.stream ? 'streamed (server-sent events)' : 'one JSON response'}</dd>
      <dt>API key</dt><dd>${logLink('key_id', r.key_id, keyName)}</dd>
      <dt>Tag</dt><dd>${r.tag === null ? none : logLink('tag', r.tag)}</dd>
      <dt>Session</dt><dd class="wrap">${r.session_id === null ? none : logLink('session_id', r.session_id)}</dd>
    </dl>
    ${cacheSection(r)}
    ${compactionSection(r)}
    ${routingSection(r)}
    ${attemptsSection(r)}
    ${costSection(r)}
    ${tokensSection(r)}
    ${latencySection(r)}
    ${bodiesSection(r, tenant.store_bodies, ctx.deps.config)}`;
  return sendConsolePage(reply, 200, renderPage(await ctx.signedInFrame(request, `Request ${r.request_id}`, 'requests'), body));
}

function section(slug: string, title: string, inner: string): string {
  return `<section aria-labelledby="${slug}-title" class="panel stage"><h2 id="${slug}-title">${title}</h2>${inner}</section>`;
}

const facts = (pairs: [string, string][]) => `<dl class="facts">${pairs.map(([dt, dd]) => `<dt>${dt}</dt><dd>${dd}</dd>`).join('')}</dl>`;

function cacheSection(r: RequestDetail): string {
  const reused = r.cache_status === 'hit' || r.cache_status === 'dedup' || r.cache_status === 'partial';
  const pairs: [string, string][] = [['Status', logLink('cache_status', r.cache_status)]];
  if (reused) {
    pairs.push(['Saved', `${usd(r.saved_cache_usd)} (${r.cache_status === 'partial' ? 'what the inputs answered from the cache cost' : 'what the reused answer cost'})`]);
    pairs.push(['Tokens not paid for', count(Math.max(0, r.saved_tokens - r.compaction_saved_tokens))]);
  }
  // A failed call was never stored: an error is not cached.
  const said = r.cache_status === 'miss' && r.status >= 400 ? FAILED_MISS : (CACHE[r.cache_status] ?? r.cache_status);
  return section('cache', 'Cache', `<p>${escapeHtml(said)}</p>${facts(pairs)}`);
}

function compactionSection(r: RequestDetail): string {
  const applied = r.compaction === 'none' || r.compaction === '' ? [] : r.compaction.split(',');
  if (applied.length === 0) {
    return section('compaction', 'Compaction', '<p>Nothing was compacted: the provider got the messages as sent (compaction off for this call, or nothing to remove).</p>');
  }
  const list = applied.map((s) => `<li>${escapeHtml(COMPACTION[s] ?? s)}</li>`).join('');
  return section(
    'compaction',
    'Compaction',
    `<p>Strategies applied:</p><ul class="plain">${list}</ul>${facts([
      ['Prompt tokens removed', count(r.compaction_saved_tokens)],
      ['Saved', usd(r.saved_compaction_usd)],
    ])}`,
  );
}

function routingSection(r: RequestDetail): string {
  return section(
    'routing',
    'Routing',
    facts([
      ['Model asked for', logLink('model', r.model_requested)],
      [
        r.status >= 400 ? 'Model called (it did not answer)' : 'Model that answered',
        r.model_used === null ? `${none} (no provider was called)` : logLink('model', r.model_used),
      ],
      ['Provider', r.provider === null ? none : escapeHtml(r.provider)],
      ['Reason', r.route_reason === null ? 'called as named (not routed)' : escapeHtml(r.route_reason)],
      ['Saved by routing', usd(r.saved_routing_usd)],
    ]),
  );
}

function attemptsSection(r: RequestDetail): string {
  if (r.attempts === null || r.attempts.length === 0) {
    const one =
      r.model_used === null || r.cache_status === 'hit'
        ? r.cache_status === 'hit'
          ? 'None: the answer came from the cache.'
          : 'None: the call ended before a provider was called.'
        : `One: ${escapeHtml(r.model_used)} answered ${r.status}${r.error_code ? ` (${escapeHtml(r.error_code)})` : ''} in ${ms(r.upstream_ms)}; no retry and no fallback.`;
    return section('attempts', 'Attempts and fallbacks', `<p>${one}</p>`);
  }
  const models = new Set(r.attempts.map((a) => a.model));
  const rows = r.attempts
    .map(
      (a, i) => `<tr><th scope="row">${i + 1}</th><td>${escapeHtml(a.model)}</td><td>${statusBadge({ status: a.status, error_code: null })}</td>
        <td>${a.error_code === null ? none : `<code>${escapeHtml(a.error_code)}</code>`}</td><td class="num">${ms(a.ms)}</td></tr>`,
    )
    .join('');
  const last = r.attempts.at(-1)!;
  const summary = `${r.attempts.length} attempts over ${models.size === 1 ? 'one model (retries)' : `${models.size} models (${models.size - 1} fallback${models.size > 2 ? 's' : ''})`}; ${isOk(last.status) ? `${escapeHtml(last.model)} answered` : 'none answered'}.`;
  return section(
    'attempts',
    'Attempts and fallbacks',
    `<p>${summary}</p>
    <div class="table-scroll" role="region" aria-labelledby="attempts-caption" tabindex="0"><table class="data-table">
      <caption id="attempts-caption">Upstream attempts, in order</caption>
      <thead><tr><th scope="col">#</th><th scope="col">Model</th><th scope="col">Status</th><th scope="col">Error code</th><th scope="col" class="num">Time</th></tr></thead>
      <tbody>${rows}</tbody>
    </table></div>`,
  );
}

function costSection(r: RequestDetail): string {
  const causes: [string, number][] = [
    ['Response cache (hit or dedup)', r.saved_cache_usd],
    ['Compaction', r.saved_compaction_usd],
    ['Routing', r.saved_routing_usd],
    ['Prompt-cache hints the gateway added', r.saved_prompt_cache_usd],
  ];
  const rows = causes.map(([cause, amount]) => `<tr><th scope="row">${cause}</th><td class="num">${usd(amount)}</td></tr>`).join('');
  return section(
    'cost',
    'Cost',
    `${facts([
      ['Cost', usd(r.cost_usd)],
      ['Saved', usd(r.cost_saved_usd)],
      ['Without the gateway', usd(r.cost_usd + r.cost_saved_usd)],
    ])}
    <div class="table-scroll" role="region" aria-labelledby="savings-caption" tabindex="0"><table class="data-table">
      <caption id="savings-caption">What the gateway saved, by cause</caption>
      <thead><tr><th scope="col">Cause</th><th scope="col" class="num">Saved</th></tr></thead>
      <tbody>${rows}</tbody>
    </table></div>
    ${facts([['The provider’s own caching', `${usd(r.saved_provider_cache_usd)} (saved by the provider’s prompt cache, not by the gateway: not in Saved)`]])}`,
  );
}

function tokensSection(r: RequestDetail): string {
  return section(
    'tokens',
    'Tokens',
    facts([
      ['Prompt', count(r.prompt_tokens)],
      ['of which read from the provider’s prompt cache', count(r.cached_tokens)],
      ['Written to the provider’s prompt cache', count(r.cache_write_tokens)],
      ['Completion', count(r.completion_tokens)],
      ['of which reasoning', count(r.reasoning_tokens)],
      ['Saved (not sent, or not paid for)', count(r.saved_tokens)],
      ...usageFlagFacts(r.usage_flags),
    ]),
  );
}

/** Why the counts are not the provider's own, when they are not (schema.ts usage_flags). */
function usageFlagFacts(flags: string | null): [string, string][] {
  if (flags === null) return [];
  const notes: string[] = [];
  if (flags.includes('estimated')) notes.push('Estimated by the gateway: the stream ended before the provider reported its usage (the prompt as estimated, the completion counted from what was relayed).');
  if (flags.includes('clamped')) notes.push('Clamped: the provider reported a count that was not a whole number from 0 to 1,000,000,000.');
  return [['Counted', notes.join(' ')]];
}

function latencySection(r: RequestDetail): string {
  return section(
    'latency',
    'Latency',
    facts([
      ['Total', ms(r.overhead_ms + r.upstream_ms)],
      ['Gateway overhead', ms(r.overhead_ms)],
      ['Upstream (the provider)', ms(r.upstream_ms)],
    ]),
  );
}

/** Binary units, as the settings are given in bytes: 1 MiB, 256 MiB, 1.5 GiB. */
function size(bytes: number): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'];
  let n = bytes;
  let unit = 0;
  while (n >= 1024 && unit < units.length - 1) {
    n /= 1024;
    unit++;
  }
  return `${unit === 0 ? count(n) : Number(n.toFixed(1))} ${units[unit]}`;
}

function bodiesSection(r: RequestDetail, storing: boolean, config: Pick<GatewayConfig, 'storedBodies' | 'usage'>): string {
  const days = Math.round(config.usage.retentionMs / 86_400_000);
  const notKept: Record<string, string> = {
    not_sent: 'This call’s bodies were not kept: it never reached a provider (bodies are kept only for calls a provider, or the cache, answered).',
    quota_full: `This call’s bodies were not kept: the bodies this workspace keeps had reached their quota of ${size(config.storedBodies.quotaBytes)}. Room comes back as older bodies leave with their records, ${days} days after their call.`,
  };
  if (r.request_body === null && r.response_body === null) {
    const why =
      notKept[r.body_storage ?? ''] ??
      (storing ? 'This call’s bodies were not kept: body storage was off when it was made.' : 'This workspace does not keep request and response bodies.');
    return section(
      'bodies',
      'Bodies',
      `<p>${why} ${storing ? '' : 'To keep them for the calls to come, turn on “Keep prompt and completion bodies” on the <a href="/settings#bodies">Settings</a> page.'}</p>`,
    );
  }
  const flags = (r.body_storage ?? '').split(',');
  return section(
    'bodies',
    'Bodies',
    `<h3>Request</h3>${bodyBlock('request-body', 'Request body', r.request_body, 'Not kept.', flags.includes('request_truncated'))}
    <h3>Response</h3>${bodyBlock('response-body', 'Response body', r.response_body, r.error_code ? `None: the call failed (${escapeHtml(r.error_code)}).` : 'Not kept.', flags.includes('response_truncated'))}`,
  );
}

/**
 * A body, escaped, pretty-printed when it is JSON, in a block that scrolls (and takes the keyboard's focus to scroll).
 * `truncated`: the body was cut when it was stored (GATEWAY_STORED_BODY_MAX_BYTES then), which the page says.
 */
function bodyBlock(id: string, label: string, text: string | null, absent: string, truncated = false): string {
  if (text === null) return `<p>${absent}</p>`;
  const note = truncated
    ? `<p class="notice truncated" role="note">Truncated: only the first ${size(Buffer.byteLength(text))} of this body were kept; the rest was cut when it was stored.</p>`
    : '';
  return note + shownBody(id, label, text);
}

function shownBody(id: string, label: string, text: string): string {
  let shown = text;
  if (text.length <= PARSED_BODY_CHARS) {
    try {
      shown = JSON.stringify(JSON.parse(text), null, 2);
    } catch {
      // Not JSON (a stream's events): shown as stored.
    }
  }
  const cut = shown.length > SHOWN_BODY_CHARS;
  const note = cut
    ? `<p class="muted">The first ${count(SHOWN_BODY_CHARS)} of ${count(shown.length)} characters; the whole body is in <code>GET /api/v1/tenant/requests/{id}</code>.</p>`
    : '';
  return `${note}<pre class="body" id="${id}" tabindex="0" role="region" aria-label="${label}">${escapeHtml(cut ? shown.slice(0, SHOWN_BODY_CHARS) : shown)}</pre>`;
}

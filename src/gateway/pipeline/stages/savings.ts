import { costUsd } from '../../catalog/cost.ts';
import type { PromptCachePlan } from '../../providers/types.ts';
import { anthropicMinimum } from '../../prompt-cache/minimum.ts';
import { promptCacheSavedUsd } from '../../prompt-cache/savings.ts';
import { accountSavings, type Baseline } from '../../savings/account.ts';
import { ElementCounts, ProfileBuilder, type PromptProfile } from '../../savings/prompt-profile.ts';
import { ConversationShadow } from '../../savings/session-shadow.ts';
import type { Call, Stage } from '../call.ts';

/**
 * The savings accounting (savings/account.ts), the last stage before the
 * upstream call: once the call is answered, what compaction and the
 * gateway's cache breakpoints saved this client against sending its own
 * request directly, and what the provider's own caching saved, reported
 * apart, and what routing saved against the model the client named. A call
 * that compaction left alone, without gateway breakpoints and without a
 * session, needs no model: all its provider caching is the provider's own,
 * and routing saved the same usage's price difference.
 */
export function savingsStage(options: { clock?: () => number; shadowBytes?: number } = {}): Stage {
  const counts = new ElementCounts();
  const shadow = new ConversationShadow(options.shadowBytes);
  const now = options.clock ?? Date.now;
  const account = async (call: Call): Promise<void> => {
    const usage = call.usage;
    const target = call.target;
    const entry = target?.entry;
    if (usage === undefined || target === undefined || entry === undefined || usage.estimated) return;
    const named = call.baseline?.entry !== undefined && call.baseline.ref !== target.ref ? call.baseline : undefined;
    const clientMessages = call.clientMessages ?? call.body.messages;
    const compacted = clientMessages !== call.body.messages;
    const gateway = gatewayBreakpoints(call.promptCache);
    if (!compacted && gateway === undefined && call.sessionId === undefined) {
      call.providerCacheSaved = promptCacheSavedUsd(usage, entry);
      if (named) call.saved.routing = (costUsd(usage, named.entry) ?? 0) - (costUsd(usage, entry) ?? 0);
      return;
    }
    const explicit = target.provider.format === 'anthropic';
    if (!compacted && gateway === undefined && !explicit && named === undefined) {
      // An OpenAI-format call sent as the client sent it: nothing for the gateway to claim, all the caching is the
      // provider's. Only its digests are kept, for a later call that is compacted (a previous request is read by its
      // digests alone): no token counting on the path most calls take.
      const profile = await new ProfileBuilder(counts, { count: false }).build(call.body.messages, call.body.tools, false);
      const conversation = conversationOf(call.sessionId, profile);
      const previous = conversation === undefined ? undefined : shadow.get(call.tenant.tenantId, `${conversation}\0${target.ref}`);
      if (previous === undefined || previous.sent0 === previous.client) {
        call.providerCacheSaved = promptCacheSavedUsd(usage, entry);
        if (conversation !== undefined) {
          const state = { profile, cached: [], at: now() };
          shadow.set(call.tenant.tenantId, `${conversation}\0${target.ref}`, { client: state, sent0: state });
        }
        return;
      }
    }
    const builder = new ProfileBuilder(counts);
    // Uncompacted, the request sent is the client's: one profile serves both (the direct model reads only the client's marks).
    const original = compacted && call.compactionOrigin ? { messages: clientMessages, origin: call.compactionOrigin } : undefined;
    const sent = await builder.build(call.body.messages, call.body.tools, explicit, gateway, original);
    const client = compacted ? await builder.build(clientMessages, call.body.tools, explicit) : sent;
    const conversation = conversationOf(call.sessionId, client);
    const tenantId = call.tenant.tenantId;
    const key = (ref: string) => `${conversation}\0${ref}`;
    const remembered = (ref: string) => (conversation === undefined ? undefined : shadow.get(tenantId, key(ref)));
    const previous = remembered(target.ref);
    let baseline: Baseline | undefined;
    if (named?.entry) {
      const namedExplicit = named.provider.format === 'anthropic';
      baseline = {
        client: namedExplicit === explicit ? client : await builder.build(clientMessages, call.body.tools, namedExplicit),
        explicit: namedExplicit,
        minimum: anthropicMinimum(named.model),
        previous: remembered(named.ref)?.client,
        entry: named.entry,
      };
    }
    const result = accountSavings({
      client,
      sent,
      explicit,
      minimum: anthropicMinimum(target.model),
      previous,
      usage,
      entry,
      baseline,
      now: now(),
    });
    call.saved.compaction = result.compactionUsd;
    call.saved.promptCache = result.promptCacheUsd;
    call.saved.routing = result.routingUsd;
    call.providerCacheSaved = result.providerCacheUsd;
    if (conversation === undefined) return;
    shadow.set(tenantId, key(target.ref), explicit ? result.next : { client: result.next.client, sent0: result.next.sent0 });
    if (named && result.nextBaseline) shadow.set(tenantId, key(named.ref), { ...remembered(named.ref), client: result.nextBaseline });
  };
  return async function accountSavingsStage(call, next) {
    await next();
    try {
      await account(call);
    } catch (err) {
      // The call was answered: an accounting fault costs its savings figures (left as they were), never the answer.
      call.log.error({ err, requestId: call.requestId }, 'savings accounting failed');
    }
  };
}

/** The tenant's X-Gateway-Session-Id, else the prompt's start (up to its first user message); undefined: neither. */
function conversationOf(sessionId: string | undefined, p: PromptProfile): string | undefined {
  return sessionId !== undefined ? `s:${sessionId}` : p.firstUser >= 0 ? `p:${p.hashes[p.firstUser]}` : undefined;
}

function gatewayBreakpoints(plan: PromptCachePlan | undefined) {
  const b = plan?.breakpoints;
  return b && (b.tools || b.system || b.messages.length > 0) ? b : undefined;
}

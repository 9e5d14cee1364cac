import type { PromptCachePlan } from '../../providers/types.ts';
import { anthropicMinimum } from '../../prompt-cache/minimum.ts';
import { promptCacheSavedUsd } from '../../prompt-cache/savings.ts';
import { accountSavings } from '../../savings/account.ts';
import { ElementCounts, ProfileBuilder } from '../../savings/prompt-profile.ts';
import { ConversationShadow } from '../../savings/session-shadow.ts';
import type { Stage } from '../call.ts';

/**
 * The savings accounting (savings/account.ts), the last stage before the
 * upstream call: once the call is answered, what compaction and the
 * gateway's cache breakpoints saved this client against sending its own
 * request directly, and what the provider's own caching saved, reported
 * apart. A call that compaction left alone, without gateway breakpoints and
 * without a session, needs no model: all its provider caching is the
 * provider's own.
 */
export function savingsStage(options: { clock?: () => number; shadowBytes?: number } = {}): Stage {
  const counts = new ElementCounts();
  const shadow = new ConversationShadow(options.shadowBytes);
  const now = options.clock ?? Date.now;
  return async function accountSavingsStage(call, next) {
    await next();
    const usage = call.usage;
    const target = call.target;
    const entry = target?.entry;
    if (usage === undefined || target === undefined || entry === undefined || usage.estimated) return;
    const clientMessages = call.clientMessages ?? call.body.messages;
    const compacted = clientMessages !== call.body.messages;
    const gateway = gatewayBreakpoints(call.promptCache);
    if (!compacted && gateway === undefined && call.sessionId === undefined) {
      call.providerCacheSaved = promptCacheSavedUsd(usage, entry);
      return;
    }
    const explicit = target.provider.format === 'anthropic';
    const builder = new ProfileBuilder(counts);
    const client = await builder.build(clientMessages, call.body.tools, explicit);
    const sent = await builder.build(call.body.messages, call.body.tools, explicit, gateway);
    const conversation = call.sessionId !== undefined ? `s:${call.sessionId}` : client.firstUser >= 0 ? `p:${client.hashes[client.firstUser]}` : undefined;
    const tenantId = call.tenant.tenantId;
    const kind = `${target.ref}\0${explicit ? 'x' : 'a'}\0`;
    const previous = conversation === undefined ? undefined : shadow.get(tenantId, kind + conversation);
    const result = accountSavings({ client, sent, explicit, minimum: anthropicMinimum(target.model), previous, usage, entry, now: now() });
    call.saved.compaction = result.compactionUsd;
    call.saved.promptCache = result.promptCacheUsd;
    call.providerCacheSaved = result.providerCacheUsd;
    call.directUsage = result.direct;
    if (conversation !== undefined) shadow.set(tenantId, kind + conversation, result.next);
  };
}

function gatewayBreakpoints(plan: PromptCachePlan | undefined) {
  const b = plan?.breakpoints;
  return b && (b.tools || b.system || b.messages.length > 0) ? b : undefined;
}

import { formatUsd } from '../catalog/cost.ts';
import type { HeaderList } from '../header-list.ts';
import { type Call, totalSaved } from '../pipeline/call.ts';

/**
 * What the gateway did, on every answer (streams included: there they are
 * sent with the status line, before the first byte, so a stream's cost is
 * `pending`; its final figures are in the usage chunk and the usage record),
 * followed by the headers the stages added (x-ratelimit-*). Values are ASCII
 * by construction: ids, provider and catalog model names.
 *
 * A flat list of names and values, as node:http's writeHead takes them: an
 * answer's head is written from it as it is, where an object of the same
 * twenty-odd headers was built property by property, spread into another
 * with the content type, then walked name by name by writeHead.
 */
export function gatewayHeaders(call: Call): HeaderList {
  const target = call.target;
  const pending = call.stream && call.streamOpened === false;
  const list: HeaderList = [
    'x-gateway-request-id',
    call.requestId,
    'x-gateway-model',
    target ? headerSafe(`${target.provider.id}/${call.modelUsed ?? target.model}`) : '',
    'x-gateway-provider',
    target?.provider.id ?? '',
    'x-gateway-cache',
    call.cacheStatus,
    'x-gateway-tokens-saved',
    String(call.tokensSaved),
    'x-gateway-compaction',
    call.compaction,
    'x-gateway-cost',
    pending ? 'pending' : formatUsd(call.costUsd),
    'x-gateway-cost-saved',
    pending && call.cacheStatus !== 'hit' ? 'pending' : formatUsd(totalSaved(call)),
    // The provider's own caching, beside the gateway's saving and never in it.
    'x-gateway-provider-cache-saved',
    pending && call.cacheStatus !== 'hit' ? 'pending' : formatUsd(call.providerCacheSaved),
    'x-gateway-overhead-ms',
    (call.overheadMs ?? performance.now() - call.startedAt - call.upstreamMs).toFixed(2),
  ];
  if (call.routeReason !== undefined) list.push('x-gateway-route-reason', call.routeReason);
  if (call.cacheAgeS !== undefined) list.push('x-gateway-cache-age', String(call.cacheAgeS));
  if (call.attempts.length > 1) list.push('x-gateway-attempts', String(call.attempts.length));
  const added = call.replyHeaders;
  for (let i = 0; i < added.length; i++) list.push(added[i]!);
  return list;
}

/** A model name a provider sent back could hold anything; a header value may only hold visible ASCII and spaces. */
function headerSafe(value: string): string {
  return /^[\x20-\x7e]*$/.test(value) ? value : encodeURIComponent(value);
}

import { formatUsd } from '../catalog/cost.ts';
import { type Call, totalSaved } from '../pipeline/call.ts';

/**
 * What the gateway did, on every answer (streams included: there they are
 * sent with the status line, before the first byte, so a stream's cost is
 * `pending`; its final figures are in the usage chunk and the usage record).
 * Values are ASCII by construction: ids, provider and catalog model names.
 */
export function gatewayHeaders(call: Call): Record<string, string> {
  const target = call.target;
  const pending = call.stream && call.streamOpened === false;
  const headers: Record<string, string> = {
    'x-gateway-request-id': call.requestId,
    'x-gateway-model': target ? headerSafe(`${target.provider.id}/${call.modelUsed ?? target.model}`) : '',
    'x-gateway-provider': target?.provider.id ?? '',
    'x-gateway-cache': call.cacheStatus,
    'x-gateway-tokens-saved': String(call.tokensSaved),
    'x-gateway-compaction': call.compaction,
    'x-gateway-cost': pending ? 'pending' : formatUsd(call.costUsd),
    'x-gateway-cost-saved': pending && call.cacheStatus !== 'hit' ? 'pending' : formatUsd(totalSaved(call)),
    'x-gateway-overhead-ms': (call.overheadMs ?? performance.now() - call.startedAt - call.upstreamMs).toFixed(2),
  };
  // Assigned, not spread: on every answer, each spread made and copied an object.
  if (call.routeReason !== undefined) headers['x-gateway-route-reason'] = call.routeReason;
  if (call.cacheAgeS !== undefined) headers['x-gateway-cache-age'] = String(call.cacheAgeS);
  if (call.attempts.length > 1) headers['x-gateway-attempts'] = String(call.attempts.length);
  for (const name in call.replyHeaders) headers[name] = call.replyHeaders[name]!;
  return headers;
}

/** A model name a provider sent back could hold anything; a header value may only hold visible ASCII and spaces. */
function headerSafe(value: string): string {
  return /^[\x20-\x7e]*$/.test(value) ? value : encodeURIComponent(value);
}

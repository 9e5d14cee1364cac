import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Clock } from '../../platform/clock.ts';
import { gatewayHeaders } from '../data-plane/gateway-headers.ts';
import type { TenantContext, TenantContexts } from '../data-plane/tenant-context.ts';
import { headerObject } from '../header-list.ts';
import { invalidApiKey } from '../openai-errors.ts';
import type { Call } from '../pipeline/call.ts';
import { type DecodedRequest, newCall } from '../pipeline/new-call.ts';

/** What every surface's route needs to run a call through the pipeline. */
export interface ServeDeps {
  tenants: TenantContexts;
  clock: Clock;
  run: (call: Call) => Promise<void>;
  /** Resolves once the usage records of the calls run so far are journaled (undefined: nothing to wait for). */
  durable: () => Promise<void> | undefined;
}

/** The caller's tenant context (almost always cached: taken at once, without an async call to await). */
export async function tenantOf(deps: Pick<ServeDeps, 'tenants'>, tenantId: string): Promise<TenantContext> {
  const tenant = deps.tenants.peek(tenantId) ?? (await deps.tenants.get(tenantId));
  if (!tenant) throw invalidApiKey();
  return tenant;
}

/**
 * Runs one decoded request through the pipeline and answers it: a stream
 * has been written by then; a complete answer is written here; an error is
 * thrown for the scope's error format, with the X-Gateway-* headers known.
 * What is answered is on disk first (the usage journal): a process killed
 * after the answer loses no answered call's record.
 */
export async function serveCall(
  request: FastifyRequest,
  reply: FastifyReply,
  deps: ServeDeps,
  tenant: TenantContext,
  input: DecodedRequest,
): Promise<FastifyReply> {
  const call = newCall(request, reply, tenant, deps.clock, gatewayHeaders, input);
  try {
    await deps.run(call);
  } catch (err) {
    if (call.streamOpened) return reply;
    const durable = deps.durable();
    if (durable) await durable;
    reply.headers(headerObject(gatewayHeaders(call)));
    throw err;
  }
  const finished = input.surface.finish?.(call);
  if (finished) await finished;
  if (call.streamOpened) return reply;
  const durable = deps.durable();
  if (durable) await durable;
  return answer(request, reply, call);
}

/**
 * A complete answer, written on the raw response as a stream's head is
 * (call.openStream): the provider's JSON as it came, with the headers
 * Fastify's reply would have sent (the platform's x-request-id included);
 * its onResponse hooks (metrics, the access log) still run when the
 * response finishes. Fastify's reply.send would parse the content type,
 * run the onSend hooks and copy every header through reply.header():
 * skipping it, the main thread ran 7.8 % fewer instructions per call
 * under benchmark 5's load (bench/instructions.ts: 563k against 610k).
 */
function answer(request: FastifyRequest, reply: FastifyReply, call: Call): FastifyReply {
  const body = call.surface.answerBody?.() ?? call.result ?? '';
  reply.hijack();
  const headers = gatewayHeaders(call);
  headers.push('content-type', 'application/json; charset=utf-8', 'content-length', String(Buffer.byteLength(body)), 'x-request-id', request.id);
  if (call.surface.name === 'messages') headers.push('request-id', request.id);
  reply.raw.writeHead(200, headers);
  reply.raw.end(body);
  return reply;
}

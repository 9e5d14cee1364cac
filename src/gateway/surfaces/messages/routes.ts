import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { errorHandler } from '../../../platform/error-format.ts';
import type { App } from '../../../platform/http.ts';
import type { JsonObject } from '../../providers/json.ts';
import { type ServeDeps, serveCall, tenantOf } from '../serve-call.ts';
import type { CountTokens } from './count-tokens.ts';
import type { ClientMessages } from './passthrough.ts';
import { stagesForm } from './stages-form.ts';
import { messagesSurface } from './surface.ts';

export interface MessagesRouteDeps extends ServeDeps {
  bodyLimit: number;
  countTokens: CountTokens;
}

/**
 * What the gateway itself reads of a Messages request; everything else is
 * the provider's to judge (Claude Code retries a 400 with features taken
 * away one at a time, so refusing a shape the gateway does not act on
 * would quietly downgrade the agent).
 */
const MessagesBody = Type.Object(
  {
    model: Type.String({ minLength: 1, maxLength: 256 }),
    messages: Type.Array(Type.Unknown()),
    stream: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: true },
);

const CountBody = Type.Object(
  { model: Type.String({ minLength: 1, maxLength: 256 }), messages: Type.Array(Type.Unknown()) },
  { additionalProperties: true },
);

/** A header the client may send several times (anthropic-beta), as one comma-separated value. */
function joined(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value.join(',') : value;
}

function clientMessages(request: FastifyRequest): ClientMessages {
  const version = request.headers['anthropic-version'];
  return {
    body: request.body as JsonObject,
    version: typeof version === 'string' ? version : undefined,
    beta: joined(request, 'anthropic-beta'),
  };
}

/**
 * Anthropic's Messages API (POST /v1/messages, streamed or not, and POST
 * /v1/messages/count_tokens), for Claude Code, the Agent SDK and every
 * client of Anthropic's SDKs. Errors in Anthropic's shape with a
 * `request-id` header, the key's refusal included. `?beta=true`, which the
 * SDKs' beta client adds, is accepted and not forwarded.
 */
export async function messagesRoutes(scope: App, deps: MessagesRouteDeps): Promise<void> {
  scope.setErrorHandler(errorHandler('anthropic'));

  scope.post(
    '/messages',
    { bodyLimit: deps.bodyLimit, schema: { summary: "Anthropic's Messages API, streamed or not", body: MessagesBody } },
    async (request, reply) => {
      const tenant = deps.tenants.peek(request.principal.tenantId) ?? (await tenantOf(deps, request.principal.tenantId));
      const client = clientMessages(request);
      const body = client.body;
      // The stages' view of the request: what budgets estimate, routing classifies, compaction and prompt caching act
      // on and the usage record counts; one part per block, each traced to where it came from (stages-form.ts).
      const form = stagesForm(body);
      return serveCall(request, reply, deps, tenant, {
        surface: messagesSurface(client, form),
        body: form.chat,
        stream: body['stream'] === true,
        includeUsage: false,
        model: body['model'] as string,
        clientSessionHeader: 'x-claude-code-session-id',
      });
    },
  );

  scope.post(
    '/messages/count_tokens',
    { bodyLimit: deps.bodyLimit, schema: { summary: 'Count the input tokens of a Messages request', body: CountBody } },
    async (request, reply) => {
      const tenant = await tenantOf(deps, request.principal.tenantId);
      const controller = new AbortController();
      reply.raw.once('close', () => controller.abort());
      const count = await deps.countTokens(tenant, clientMessages(request), controller.signal);
      return reply.header('request-id', request.id).header('x-gateway-token-count', count.countedBy).send({ input_tokens: count.inputTokens });
    },
  );
}

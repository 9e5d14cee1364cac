import { Type } from 'typebox';
import type { App } from '../../../platform/http.ts';
import { chatCompletionsInput } from '../../pipeline/new-call.ts';
import { type ServeDeps, serveCall, tenantOf } from '../serve-call.ts';

const Role = Type.Union(['system', 'developer', 'user', 'assistant', 'tool', 'function'].map((r) => Type.Literal(r)));
const Message = Type.Object({ role: Role }, { additionalProperties: true });

/** The fields the gateway itself reads; every other field is the provider's business and passes through. */
const ChatBody = Type.Object(
  {
    model: Type.String({ minLength: 1, maxLength: 256 }),
    messages: Type.Array(Message, { minItems: 1 }),
    stream: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
    stream_options: Type.Optional(
      Type.Union([Type.Object({ include_usage: Type.Optional(Type.Boolean()) }, { additionalProperties: true }), Type.Null()]),
    ),
    n: Type.Optional(Type.Union([Type.Integer({ minimum: 1, maximum: 128 }), Type.Null()])),
  },
  { additionalProperties: true },
);

/** POST /v1/chat/completions: the stages' own form, so the request is the call as it is. */
export async function chatCompletionsRoutes(app: App, deps: ServeDeps & { bodyLimit: number }): Promise<void> {
  app.post(
    '/chat/completions',
    { bodyLimit: deps.bodyLimit, schema: { summary: 'OpenAI-compatible chat completions, streamed or not', body: ChatBody } },
    async (request, reply) => {
      const tenant = deps.tenants.peek(request.principal.tenantId) ?? (await tenantOf(deps, request.principal.tenantId));
      return serveCall(request, reply, deps, tenant, chatCompletionsInput(request));
    },
  );
}

import { Type } from 'typebox';
import type { App } from '../../../platform/http.ts';
import { isObject, type JsonObject } from '../../providers/json.ts';
import { type ServeDeps, serveCall, tenantOf } from '../serve-call.ts';
import { responseRetentionMs } from '../../settings/responses.ts';
import { type ResponseStore, responseRoomLeft, responseStorageFull } from './store.ts';
import { responsesSurface } from './surface.ts';
import { decodeResponses } from './to-chat.ts';

export interface ResponsesRouteDeps extends ServeDeps {
  bodyLimit: number;
  responses: ResponseStore;
}

/**
 * What the gateway itself reads of a Responses request; everything else is
 * OpenAI's to judge, and passes through to it untouched (Codex sends fields
 * the SDKs' types do not list, such as `client_metadata`).
 */
const ResponsesBody = Type.Object(
  {
    model: Type.String({ minLength: 1, maxLength: 256 }),
    input: Type.Optional(Type.Union([Type.String(), Type.Array(Type.Unknown())])),
    stream: Type.Optional(Type.Boolean()),
    store: Type.Optional(Type.Boolean()),
    previous_response_id: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
    include: Type.Optional(Type.Array(Type.String({ maxLength: 128 }), { maxItems: 64 })),
  },
  { additionalProperties: true },
);

/** What a stateless upstream call asks for so that reasoning carries across turns without OpenAI keeping it. */
const ENCRYPTED_REASONING = 'reasoning.encrypted_content';

/** The neutral options the stages' form is read with (each translated target gets its own: surface.ts). */
const STAGES_FORM = { reasoning: false, maxTokensField: 'max_tokens', maxOutputTokens: undefined, anthropic: false } as const;

/**
 * OpenAI's Responses API (POST /v1/responses, streamed or not), for Codex,
 * the Agents SDK and the `openai` SDKs' `responses.create`. The gateway
 * keeps the conversation: with `store` true (the default) each response and
 * its input items are stored for the tenant (store.ts), and a later
 * `previous_response_id` is expanded into the whole input here, so every
 * upstream call is stateless and any provider can answer any turn. A
 * client's `store: false` keeps nothing and, without a previous response,
 * goes upstream as it was sent. Errors in OpenAI's shape (the data plane's).
 */
export async function responsesRoutes(app: App, deps: ResponsesRouteDeps): Promise<void> {
  app.post(
    '/responses',
    { bodyLimit: deps.bodyLimit, schema: { summary: "OpenAI's Responses API, streamed or not", body: ResponsesBody } },
    async (request, reply) => {
      const startedAt = performance.now();
      const tenant = deps.tenants.peek(request.principal.tenantId) ?? (await tenantOf(deps, request.principal.tenantId));
      const client = request.body as JsonObject;
      const store = client['store'] !== false;
      const previousId = typeof client['previous_response_id'] === 'string' ? client['previous_response_id'] : undefined;
      if (store && !responseRoomLeft(tenant)) throw responseStorageFull();
      const turn = turnItems(client['input']);
      // Sealed turns are base64 and carry each response's echo of its request: twice the body limit holds a conversation
      // a client could have sent inline (expand refuses a longer one with a 400).
      const chain = previousId === undefined ? undefined : await deps.responses.expand(tenant.tenantId, previousId, 2 * deps.bodyLimit);
      const sent = !store && chain === undefined ? client : statelessBody(client, chain?.items, turn);
      const form = decodeResponses(sent, STAGES_FORM);
      const retentionMs = responseRetentionMs(tenant.settings);
      const surface = responsesSurface({
        client,
        sent,
        form: { messages: form.chat.messages, groups: form.groups },
        echo: { store: sent === client ? undefined : store, previousResponseId: previousId ?? null },
        responseId: `resp_${request.id.replaceAll('-', '')}`,
        createdAt: Math.floor(deps.clock.now() / 1000),
        chainFirstId: chain?.firstId,
        onResponse: (response) => {
          if (!store || typeof response['id'] !== 'string') return undefined;
          return deps.responses
            .put(tenant.tenantId, { id: response['id'], previousId, input: turn, response }, retentionMs)
            .catch((err: unknown) => request.log.error({ err }, 'a response could not be stored'));
        },
      });
      return serveCall(request, reply, deps, tenant, {
        surface,
        body: form.chat,
        stream: client['stream'] === true,
        // A Responses stream always ends with the whole response and its usage (response.completed).
        includeUsage: true,
        model: client['model'] as string,
        clientSessionHeader: 'session-id',
        // X-Gateway-Overhead-Ms counts the chain's expansion (a query and the turns opened) and the decoding.
        startedAt,
      });
    },
  );
}

/** This turn's input as items: a string is one user message (as OpenAI reads it). */
function turnItems(input: unknown): JsonObject[] {
  if (typeof input === 'string') return [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: input }] }];
  return Array.isArray(input) ? input.filter(isObject) : [];
}

/**
 * The request as a stateless call: the chain's items (as OpenAI accepts
 * them from a client that keeps no state: see upstreamItem) then this
 * turn's, `store: false`, encrypted reasoning included, no
 * `previous_response_id`. The client's other fields stay in their order.
 */
function statelessBody(client: JsonObject, chain: readonly JsonObject[] | undefined, turn: readonly JsonObject[]): JsonObject {
  const body: JsonObject = {};
  for (const [name, value] of Object.entries(client)) {
    if (name === 'previous_response_id') continue;
    body[name] = value;
  }
  if (chain !== undefined) {
    const items: JsonObject[] = [];
    for (const item of chain) {
      const sent = upstreamItem(item);
      if (sent !== undefined) items.push(sent);
    }
    body['input'] = [...items, ...turn];
  }
  body['store'] = false;
  const include = Array.isArray(client['include']) ? client['include'] : [];
  body['include'] = include.includes(ENCRYPTED_REASONING) ? include : [...include, ENCRYPTED_REASONING];
  return body;
}

/**
 * A stored item as input to a call OpenAI keeps nothing of: messages,
 * function calls and their outputs without their ids (ids name items
 * OpenAI would have stored); reasoning only with its encrypted content
 * (which it is decrypted from; a summary another provider's reasoning was
 * written as cannot be read back), other items as stored.
 */
function upstreamItem(item: JsonObject): JsonObject | undefined {
  const type = item['type'] ?? 'message';
  if (type === 'reasoning') return typeof item['encrypted_content'] === 'string' ? item : undefined;
  if ((type === 'message' || type === 'function_call' || type === 'function_call_output') && 'id' in item) {
    const { id: _id, status: _status, ...rest } = item;
    return rest;
  }
  return item;
}

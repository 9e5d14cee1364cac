import { Type } from 'typebox';
import type { App } from '../../../platform/http.ts';
import type { Call } from '../../pipeline/call.ts';
import type { JsonObject } from '../../providers/json.ts';
import { type ServeDeps, serveCall, tenantOf } from '../serve-call.ts';
import { decodeEmbeddings, stagesForm } from './request.ts';
import { EmbeddingsSurface } from './surface.ts';

export interface EmbeddingsRouteDeps extends ServeDeps {
  bodyLimit: number;
  /** The embeddings pipeline (pipeline.ts), beside `run`, the chat one. */
  runEmbeddings: (call: Call) => Promise<void>;
}

/**
 * The fields the gateway reads; every other one goes to the provider as
 * sent (and into the cache key: it may change the vector). `input` is
 * checked by decodeEmbeddings, whose 400 says which shapes it takes.
 */
const EmbeddingsBody = Type.Object(
  {
    model: Type.String({ minLength: 1, maxLength: 256 }),
    input: Type.Unknown(),
    dimensions: Type.Optional(Type.Integer({ minimum: 1, maximum: 65_536 })),
    encoding_format: Type.Optional(Type.Union([Type.Literal('float'), Type.Literal('base64')])),
    user: Type.Optional(Type.String()),
  },
  { additionalProperties: true },
);

/** POST /v1/embeddings (OpenAI's "Create embeddings"), answered per input from the cache where it can (input-cache.ts). */
export async function embeddingsRoutes(app: App, deps: EmbeddingsRouteDeps): Promise<void> {
  const serve: ServeDeps = { ...deps, run: deps.runEmbeddings };
  app.post(
    '/embeddings',
    { bodyLimit: deps.bodyLimit, schema: { summary: 'OpenAI-compatible embeddings, each input cached on its own', body: EmbeddingsBody } },
    async (request, reply) => {
      const tenant = deps.tenants.peek(request.principal.tenantId) ?? (await tenantOf(deps, request.principal.tenantId));
      const embeddings = decodeEmbeddings(request.body as JsonObject);
      return serveCall(request, reply, serve, tenant, {
        surface: new EmbeddingsSurface(embeddings),
        body: stagesForm(embeddings),
        stream: false,
        includeUsage: false,
        model: embeddings.model,
      });
    },
  );
}

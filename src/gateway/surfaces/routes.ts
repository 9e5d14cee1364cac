import type { App } from '../../platform/http.ts';
import { type ApiKeyStore, requireGatewayKey } from '../data-plane/api-key-auth.ts';
import { chatCompletionsRoutes } from './chat-completions/routes.ts';
import { type EmbeddingsRouteDeps, embeddingsRoutes } from './embeddings/routes.ts';
import { type MessagesRouteDeps, messagesRoutes } from './messages/routes.ts';
import { modelRoutes } from './models.ts';
import { type ResponsesRouteDeps, responsesRoutes } from './responses/routes.ts';
import { storedResponseRoutes } from './responses/stored-routes.ts';

export interface DataPlaneRouteDeps extends MessagesRouteDeps, ResponsesRouteDeps, EmbeddingsRouteDeps {
  apiKeys: ApiKeyStore;
}

/**
 * The data plane (mounted under /v1), behind sk-gw- keys: the models list
 * and one set of routes per inbound surface (surfaces/): OpenAI's Chat
 * Completions, Responses (with the responses the gateway keeps) and
 * embeddings in this scope's OpenAI error shape, Anthropic's Messages in a
 * scope of its own with Anthropic's.
 */
export async function dataPlaneRoutes(app: App, deps: DataPlaneRouteDeps): Promise<void> {
  app.addHook('onRequest', requireGatewayKey(deps.apiKeys));
  await modelRoutes(app, deps);
  await chatCompletionsRoutes(app, deps);
  await responsesRoutes(app, deps);
  await storedResponseRoutes(app, deps);
  await embeddingsRoutes(app, deps);
  await app.register(async (scope: App) => messagesRoutes(scope, deps));
}

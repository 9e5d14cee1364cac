/**
 * The sentence ending every `unsupported_content` message of the Responses
 * surface: why the gateway cannot send a piece of a request to a provider
 * other than OpenAI. Such calls go out as Chat Completions (to-chat.ts);
 * the first problem found is kept by the Messages surface's FirstProblem.
 */
export const NOT_CARRIED =
  "cannot be sent to this model: the gateway reaches its provider through OpenAI's Chat Completions, which has no equivalent";

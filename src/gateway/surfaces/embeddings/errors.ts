import { HttpProblem } from '../../../platform/errors.ts';
import { invalidBody } from '../../openai-errors.ts';

/** OpenAI's limit on the inputs of one embeddings request ("Create embeddings": at most 2048). */
export const MAX_INPUTS = 2048;

/** The surface's own refusals, one factory each (the data plane's shared ones are in openai-errors.ts). */

export const invalidInput = () =>
  invalidBody('input', 'input must be a string, an array of strings, an array of token ids, or an array of token-id arrays (not empty).');

export const tooManyInputs = (count: number) =>
  invalidBody('input', `input has ${count} items; an embeddings request may have at most ${MAX_INPUTS}: send them in several requests.`);

/** A model of a provider without an embeddings API (Anthropic's): nothing to send it to. */
export const embeddingsNotSupported = (provider: string, model: string) =>
  new HttpProblem(
    400,
    'embeddings_not_supported',
    `The model "${model}" is served by ${provider}, which has no embeddings API; name an embedding model of an OpenAI-compatible provider (GET /v1/models lists them), such as openai/text-embedding-3-small.`,
    { type: 'invalid_request_error', param: 'model' },
  );

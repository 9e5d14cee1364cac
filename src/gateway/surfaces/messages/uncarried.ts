import { HttpProblem } from '../../../platform/errors.ts';

/**
 * What a Messages request holds that a Chat Completions provider cannot be
 * sent, gathered while decoding (to-chat.ts). Only the first is kept: the
 * client gets one 400 naming the first thing to change, as Anthropic's own
 * validation answers. The decode goes on after it, so the same decode still
 * serves a call that goes to Anthropic untouched.
 */
export class FirstProblem {
  #first: HttpProblem | undefined;

  get first(): HttpProblem | undefined {
    return this.#first;
  }

  note(problem: HttpProblem): void {
    this.#first ??= problem;
  }

  /** Content the translation has no place for (a block type, a source type, a forced tool). */
  unsupported(param: string, message: string): void {
    if (this.#first === undefined) this.note(new HttpProblem(400, 'unsupported_content', message, { type: 'invalid_request_error', param }));
  }

  /** A shape the Messages API would refuse too (a message that is not an object): named, not guessed at. */
  invalid(param: string, message: string): void {
    if (this.#first === undefined) this.note(new HttpProblem(400, 'invalid_request_body', message, { type: 'invalid_request_error', param }));
  }
}

/** The sentence ending every `unsupported_content` message: why the gateway cannot send it. */
export const NOT_CARRIED = "cannot be sent to this model: its provider speaks OpenAI's Chat Completions, which has no equivalent";

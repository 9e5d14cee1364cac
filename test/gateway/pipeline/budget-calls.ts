import OpenAI from 'openai';
import { MODELS } from '../../../src/gateway/catalog/models.ts';
import { estimatePromptTokens } from '../../../src/gateway/tokens.ts';
import { ManualClock } from '../../../src/platform/clock.ts';

/** What the budget suites send and expect: one small call to gpt-4o-mini and its estimate as docs/gateway-budgets.md states it. */
export const MINI = MODELS.find((m) => m.provider === 'openai' && m.id === 'gpt-4o-mini')!;
export const MAX_TOKENS = 100;
export const BODY = { model: 'openai/gpt-4o-mini', messages: [{ role: 'user' as const, content: 'hi' }], max_tokens: MAX_TOKENS };
/** Prompt tokens of BODY as the gateway estimates them for a reservation (framing included); the fake reports as many. */
export const PROMPT = estimatePromptTokens(BODY.messages);
/** Reserved per call: the prompt plus max_tokens, at the catalog price. */
export const ESTIMATE_TOKENS = PROMPT + MAX_TOKENS;
export const ESTIMATE_USD = (PROMPT * MINI.input + MAX_TOKENS * MINI.output) / 1e6;
/** What the fake reports per call in these suites: far below the estimate. */
export const SPENT_COMPLETION = 3;
export const SPENT_USD = (PROMPT * MINI.input + SPENT_COMPLETION * MINI.output) / 1e6;

/**
 * A clock half a minute into a mid-month minute of next year: the windows
 * never straddle a boundary unless a test moves the clock, and Redis keys
 * expiring at "window end" are in the future for the real Redis too.
 */
export const START = Date.UTC(new Date().getUTCFullYear() + 1, 2, 15, 12, 0, 30);
export const newClock = () => new ManualClock(START);

export interface Outcome {
  status: number;
  headers: Headers;
  code?: string | null | undefined;
  type?: string | undefined;
  message?: string | undefined;
}

/** One call through the OpenAI SDK; a refusal is returned, not thrown. */
export async function ask(openai: OpenAI, body: OpenAI.ChatCompletionCreateParamsNonStreaming = BODY): Promise<Outcome> {
  try {
    const { response } = await openai.chat.completions.create(body).withResponse();
    return { status: response.status, headers: response.headers };
  } catch (err) {
    if (err instanceof OpenAI.APIError && err.status !== undefined) {
      return { status: err.status, headers: err.headers as Headers, code: err.code, type: err.type, message: err.message };
    }
    throw err;
  }
}

/** Polls (bounded) until `check` holds: for what crosses Redis pub/sub or a settle not awaited by the reply. */
export async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

export const count = (outcomes: Outcome[], status: number) => outcomes.filter((o) => o.status === status).length;

import { type Answer, Failure, header, json } from './http.ts';

/**
 * The gateway side of the mix: chat completion requests as a support
 * assistant's backend sends them, some repeating a popular question (the
 * response cache should answer those) and most of them new (misses, which
 * go to the fake provider). The fake answers `echo: <the user's text>`, so
 * every answer is checked against the question it was asked for: a cached
 * answer served to the wrong question, or to the wrong workspace, fails.
 */

export const MODEL = 'openai/gpt-4o-mini';
const SYSTEM = 'You are the support assistant of a small online shop. Answer briefly and politely; say so when you do not know.';

/** Questions many customers ask, word for word (the FAQ buttons of the chat window). */
const POPULAR = [
  'How do I reset my password?',
  'Where is my order?',
  'Can I change the delivery address after ordering?',
  'What is your refund policy?',
  'How long does shipping to Canada take?',
  'Do you ship to Norway?',
  'How do I cancel my subscription?',
  'Which payment methods do you accept?',
  'Can I pay with a gift card and a credit card together?',
  'How do I download my invoice?',
  'Is there a student discount?',
  'My discount code does not work. What can I do?',
  'How do I delete my account?',
  'Can I return an item bought on sale?',
  'What sizes does the winter jacket come in?',
  'How do I contact a human?',
  'Do you have a shop in Lyon?',
  'Why was my card declined?',
  'How do I change my email address?',
  'When will the blue mug be back in stock?',
  'Is the leather bag waterproof?',
  'How do I track a return?',
  'Can I order by phone?',
  'Do prices include VAT?',
] as const;

const ITEMS = ['order', 'parcel', 'refund', 'invoice', 'exchange', 'voucher', 'subscription', 'pre-order'];
const TROUBLES = [
  'arrived damaged',
  'was charged twice',
  'shows the wrong address',
  'has been stuck in customs for a week',
  'is missing one item',
  'was never confirmed by email',
  'lists the wrong size',
];

/** The user's text and whether it is one of the popular questions. */
export interface Question {
  text: string;
  popular: boolean;
}

/** A popular question (`popularShare` of the time), else a new one: a customer's own words, never asked before in this run. */
export function pickQuestion(random: () => number, popularShare: number, serial: number, runId: string): Question {
  if (random() < popularShare) return { text: POPULAR[Math.floor(random() * POPULAR.length)]!, popular: true };
  const item = ITEMS[Math.floor(random() * ITEMS.length)]!;
  const trouble = TROUBLES[Math.floor(random() * TROUBLES.length)]!;
  return { text: `Hello, my ${item} ${runId}-${serial} ${trouble}. What should I do next?`, popular: false };
}

export function chatBody(question: Question, stream: boolean): string {
  return JSON.stringify({
    model: MODEL,
    messages: [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: question.text },
    ],
    max_tokens: 256,
    ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
  });
}

/** X-Gateway-Cache of the answer, checked against the question: a new question can only be a miss. */
export function cacheStatus(answer: Answer, question: Question): 'hit' | 'miss' | 'dedup' {
  const status = header(answer, 'x-gateway-cache');
  if (status !== 'hit' && status !== 'miss' && status !== 'dedup') throw new Failure('bad answer', `X-Gateway-Cache: ${status}`);
  if (status !== 'miss' && !question.popular) throw new Failure('false hit', `a new question answered with X-Gateway-Cache: ${status}`);
  return status;
}

const expected = (question: Question) => `echo: ${question.text}`;

/** A non-streamed answer: one choice whose content is the echo of this question, finished with stop. */
export function checkCompletion(answer: Answer, question: Question): void {
  const body = json<{ choices?: { message?: { content?: string }; finish_reason?: string }[] }>(answer);
  const choice = body.choices?.[0];
  if (choice?.message?.content !== expected(question) || choice.finish_reason !== 'stop') {
    throw new Failure('bad answer', `for "${question.text}": ${answer.text.slice(0, 300)}`);
  }
}

/** A streamed answer: SSE events whose deltas join into the echo of this question, a stop, a usage chunk, then [DONE]. */
export function checkStream(answer: Answer, question: Question): void {
  const type = header(answer, 'content-type') ?? '';
  if (!type.startsWith('text/event-stream')) throw new Failure('bad answer', `content-type ${type}`);
  const events = answer.text
    .split('\n')
    .filter((line) => line.startsWith('data:'))
    .map((line) => line.slice(5).trim());
  if (events.at(-1) !== '[DONE]') throw new Failure('bad answer', `stream not ended by [DONE]: ${answer.text.slice(-200)}`);
  let text = '';
  let stopped = false;
  let usage = false;
  for (const data of events.slice(0, -1)) {
    let chunk: { error?: unknown; usage?: unknown; choices?: { delta?: { content?: string }; finish_reason?: string | null }[] };
    try {
      chunk = JSON.parse(data);
    } catch {
      throw new Failure('bad answer', `an event that is not JSON: ${data.slice(0, 200)}`);
    }
    if (chunk.error) throw new Failure('stream error', data.slice(0, 300));
    if (chunk.usage) usage = true;
    for (const choice of chunk.choices ?? []) {
      text += choice.delta?.content ?? '';
      if (choice.finish_reason === 'stop') stopped = true;
    }
  }
  if (text !== expected(question) || !stopped || !usage) {
    throw new Failure('bad answer', `for "${question.text}": text "${text.slice(0, 200)}", stop ${stopped}, usage ${usage}`);
  }
}

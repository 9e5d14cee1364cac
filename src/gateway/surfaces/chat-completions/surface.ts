import type { Surface } from '../surface.ts';
import { CHAT_COMPLETIONS_ANSWERS } from './answer-format.ts';

/** OpenAI Chat Completions: the stages' own form, so every provider adapter serves it as it is. */
export const CHAT_COMPLETIONS: Surface = {
  name: 'chat.completions',
  stages: { compaction: true, promptCache: true, cache: true },
  answers: CHAT_COMPLETIONS_ANSWERS,
  adapter: (target) => target.adapter,
};

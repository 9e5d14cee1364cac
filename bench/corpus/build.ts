import { writeFileSync } from 'node:fs';
import { catalogEntry } from '../../src/gateway/catalog/catalog.ts';
import { countPromptTokens } from '../../src/gateway/tokens.ts';
import type { Transcript } from './session.ts';
import { codeReview, dataAnalysis, dependencyUpgrade, repoWideRename, supportChat } from './sessions/conversations.ts';
import { dockerRetries, ordersMigration, pythonParser, rustCache, windowsCi } from './sessions/others.ts';
import { flakyTest, rateLimiterFeature, refactorAuth } from './sessions/typescript.ts';

/**
 * `node bench/corpus/build.ts`: writes transcripts.jsonl (README.md has the
 * format) from the session scripts and their material, checks each session
 * (a known model, tool calls paired with their results, ends with an answer)
 * and prints its size. The output is the same on every run.
 */
const SESSIONS: (() => Transcript)[] = [
  refactorAuth,
  rateLimiterFeature,
  flakyTest,
  pythonParser,
  rustCache,
  ordersMigration,
  dockerRetries,
  windowsCi,
  codeReview,
  supportChat,
  dataAnalysis,
  repoWideRename,
  dependencyUpgrade,
];

function check(t: Transcript): void {
  const [provider, ...rest] = t.model.split('/');
  if (!catalogEntry(provider!, rest.join('/'))) throw new Error(`${t.id}: ${t.model} is not in the catalog`);
  const open = new Set<string>();
  for (const [i, m] of t.messages.entries()) {
    if (m.role === 'tool') {
      if (!open.delete(m.tool_call_id as string)) throw new Error(`${t.id}: message ${i} answers no open tool call`);
      continue;
    }
    if (open.size) throw new Error(`${t.id}: message ${i} comes before every tool call has its result`);
    for (const call of (m.tool_calls as { id: string; function: { arguments: string } }[] | undefined) ?? []) {
      JSON.parse(call.function.arguments);
      open.add(call.id);
    }
  }
}

const lines: string[] = [];
for (const make of SESSIONS) {
  const t = make();
  check(t);
  lines.push(JSON.stringify(t));
  const turns = t.messages.filter((m) => m.role === 'assistant').length;
  process.stdout.write(`${t.id.padEnd(24)} ${String(t.messages.length).padStart(4)} messages ${String(turns).padStart(3)} turns ${String(countPromptTokens(t.messages, t.tools)).padStart(7)} tokens\n`);
}
writeFileSync(new URL('transcripts.jsonl', import.meta.url), `${lines.join('\n')}\n`);

import fc from 'fast-check';
import type { Message } from '../../../src/gateway/compaction/messages.ts';

/**
 * Random agent conversations for the property tests: a system prompt (or
 * none), a first user message, then user messages, assistant texts and
 * assistant tool calls with their results; results are short, long (past
 * the tool-output cut), whitespace-heavy (CRLF, trailing spaces, blank
 * runs, code fences, JSON), repeats of earlier results, or text parts.
 */

const LINES = [
  'const answer = compute(input);   ',
  '    return { ok: true, value };',
  '',
  '   ',
  '\t\tindented with tabs',
  '```ts',
  '```',
  '{"key": "two  spaces\\n and a \\"quote\\"", "n": 1}',
  'PASS test/gateway/pipeline/cache.test.ts (412 ms)',
  'FAIL test/gateway/compaction/whitespace.test.ts',
  '  ● whitespace › keeps indentation',
  'error TS2345: Argument of type string is not assignable to parameter of type number.',
  'npm warn deprecated glob@7.2.3: Glob versions prior to v9 are no longer supported',
  '😀 unicode line ü',
];

const line = fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...LINES) }, { weight: 1, arbitrary: fc.string({ maxLength: 40 }) });

/** A multi-line text: some lines, an end-of-line style, optionally repeated into a long output. */
const text = (maxRepeat: number) =>
  fc
    .record({ lines: fc.array(line, { minLength: 1, maxLength: 12 }), crlf: fc.boolean(), repeat: fc.integer({ min: 1, max: maxRepeat }) })
    .map(({ lines, crlf, repeat }) => {
      const out: string[] = [];
      for (let r = 0; r < repeat; r++) for (const l of lines) out.push(repeat > 1 ? `${r}: ${l}` : l);
      return out.join(crlf ? '\r\n' : '\n');
    });

type Step =
  | { kind: 'user'; text: string; parts: boolean }
  | { kind: 'assistant'; text: string }
  | { kind: 'tools'; calls: { name: string; args: string; output: string | number; parts: boolean }[] };

const TOOL_NAMES = ['read_file', 'run_tests', 'bash', 'search'] as const;

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('user' as const), text: text(3), parts: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('assistant' as const), text: text(2) }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('tools' as const),
      calls: fc.array(
        fc.record({
          name: fc.constantFrom(...TOOL_NAMES),
          args: fc.oneof(
            fc.string({ maxLength: 20 }).map((p) => JSON.stringify({ path: p })),
            // The same few files, read again (superseded-reads), with their keys in either order.
            fc.record({ path: fc.constantFrom('src/a.ts', 'src/b.ts'), flip: fc.boolean() }).map(({ path, flip }) => (flip ? `{"limit": 2000, "path": "${path}"}` : JSON.stringify({ path, limit: 2000 }))),
            fc.string({ maxLength: 20 }).map((p) => JSON.stringify({ command: `npm test ${p}`, cwd: '.' }, null, 2)),
          ),
          // A number is a repeat: the output of that earlier call (modulo how many there were).
          output: fc.oneof({ weight: 3, arbitrary: text(120) }, { weight: 1, arbitrary: fc.nat() }),
          parts: fc.boolean(),
        }),
        { minLength: 1, maxLength: 3 },
      ),
    }),
  },
);

export interface Conversation {
  messages: Message[];
  tools: unknown;
}

const TOOLS = TOOL_NAMES.map((name) => ({
  type: 'function',
  function: { name, description: `The ${name} tool.`, parameters: { type: 'object', properties: { path: { type: 'string' } } } },
}));

export const conversation: fc.Arbitrary<Conversation> = fc
  .record({
    system: fc.option(text(2), { nil: undefined }),
    first: text(2),
    steps: fc.array(step, { minLength: 1, maxLength: 30 }),
    tools: fc.boolean(),
  })
  .map(({ system, first, steps, tools }) => {
    const messages: Message[] = [];
    if (system !== undefined) messages.push({ role: 'system', content: system });
    messages.push({ role: 'user', content: first });
    const outputs: string[] = [];
    let callNo = 0;
    for (const s of steps) {
      if (s.kind === 'user') messages.push({ role: 'user', content: s.parts ? [{ type: 'text', text: s.text }] : s.text });
      else if (s.kind === 'assistant') messages.push({ role: 'assistant', content: s.text });
      else {
        const ids = s.calls.map(() => `call_${++callNo}`);
        messages.push({
          role: 'assistant',
          content: null,
          tool_calls: s.calls.map((c, i) => ({ id: ids[i], type: 'function', function: { name: c.name, arguments: c.args } })),
        });
        for (const [i, c] of s.calls.entries()) {
          const output = typeof c.output === 'number' ? (outputs[c.output % Math.max(1, outputs.length)] ?? 'empty') : c.output;
          outputs.push(output);
          messages.push({ role: 'tool', tool_call_id: ids[i], content: c.parts ? [{ type: 'text', text: output }] : output });
        }
      }
    }
    return { messages, tools: tools ? TOOLS : undefined };
  });

/** The requests a client sends over a conversation: the messages up to each assistant message (and the whole). */
export function turns(messages: readonly Message[]): Message[][] {
  const out: Message[][] = [];
  for (const [i, m] of messages.entries()) if (m.role === 'assistant' && i > 0) out.push(messages.slice(0, i));
  out.push(messages.slice());
  return out;
}

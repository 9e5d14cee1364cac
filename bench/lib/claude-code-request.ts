import { readFileSync } from 'node:fs';

/**
 * One turn of a coding agent's session, shaped as Claude Code sends it, for
 * the Messages benchmark (bench/benchmarks/gateway-messages.ts): a system
 * prompt of two text blocks, the second marked for caching; seven tools with
 * full JSON Schemas, the last marked; a task, then three tool-use rounds
 * (search, read a file, edit it) with their results, the last result marked
 * (three breakpoints, as Claude Code places them). The same conversation is
 * built twice from one script: as an Anthropic Messages request and as the
 * Chat Completions request an OpenAI-SDK client sends for the same Claude
 * model (cache_control on content parts and on the last tool, which the
 * gateway carries to Anthropic), so both surfaces send the fake the same work.
 * `[<id>]` in the last tool result is autocannon's placeholder: every request
 * differs, so no cache answers one.
 */

const MATERIAL = new URL('../corpus/material/', import.meta.url);
const material = (path: string) => readFileSync(new URL(path, MATERIAL), 'utf8');

const EPHEMERAL = { type: 'ephemeral' } as const;

/** The placeholder autocannon replaces with a fresh id in every request (idReplacement). */
export const ID_PLACEHOLDER = '[<id>]';

const SYSTEM_INTRO = 'You are an interactive coding agent working in a git repository on the user\'s machine. Use the tools below to inspect and change files and to run commands.';

const SYSTEM_RULES = [
  '# Tone and style',
  'Be concise and direct. Answer in fewer than four lines unless the user asks for detail. Do not add preamble or a summary of what you did unless asked.',
  'When you run a non-trivial command, say in one sentence what it does and why.',
  '# Doing tasks',
  'The user will mostly ask you to fix bugs, add features, refactor code and explain code. For each task:',
  '1. Search the codebase to understand it before changing anything; use the search tools in parallel when the searches are independent.',
  '2. Plan the change with the todo tool when it takes more than two steps, and mark each step done as soon as it is.',
  '3. Make the change, following the conventions of the surrounding code: its naming, its imports, its error handling, its comments.',
  '4. Verify it with the project\'s own tests and checks; find out how they are run from the README or the package manifest, never assume.',
  '5. Never commit unless the user asks you to.',
  '# Following conventions',
  'Before using a library, check that the project already depends on it. Mimic the style of existing files. Never introduce code that exposes or logs secrets and keys.',
  'Add comments only where the code does something a reader would not expect, and say why rather than what.',
  '# Tool use',
  'Prefer the dedicated tools over shell commands for reading, searching and editing files. Read a file before editing it. Paths are absolute.',
  'When a command fails, read its output, fix the cause and run it again; do not retry blindly.',
  '# Environment',
  'Working directory: /home/dev/service. Is a git repository: yes. Platform: linux. Today\'s date: 2026-11-30.',
  'Model: claude-sonnet-4-5. Knowledge cutoff: January 2025.',
].join('\n');

interface ToolSpec {
  name: string;
  description: string;
  properties: Record<string, unknown>;
  required: string[];
}

const filePath = { type: 'string', description: 'The absolute path to the file.' };

const TOOLS: ToolSpec[] = [
  {
    name: 'Read',
    description:
      'Reads a file from the local filesystem. The file_path must be absolute. By default it reads up to 2000 lines from the start; offset and limit read a part of a long file. Lines are returned numbered, starting at 1. Images and PDFs are returned as content blocks.',
    properties: { file_path: filePath, offset: { type: 'number', description: 'The line to start at.' }, limit: { type: 'number', description: 'How many lines to read.' } },
    required: ['file_path'],
  },
  {
    name: 'Edit',
    description:
      'Performs an exact string replacement in a file. The file must have been read first. old_string must occur exactly once unless replace_all is set; keep the indentation as it appears after the line-number prefix.',
    properties: {
      file_path: filePath,
      old_string: { type: 'string', description: 'The text to replace.' },
      new_string: { type: 'string', description: 'The text to replace it with (must differ from old_string).' },
      replace_all: { type: 'boolean', default: false, description: 'Replace every occurrence of old_string.' },
    },
    required: ['file_path', 'old_string', 'new_string'],
  },
  {
    name: 'Write',
    description: 'Writes a file to the local filesystem, overwriting any file at that path. Prefer editing existing files; never create documentation files unless asked.',
    properties: { file_path: filePath, content: { type: 'string', description: 'The content to write.' } },
    required: ['file_path', 'content'],
  },
  {
    name: 'Bash',
    description:
      'Executes a bash command in a persistent shell session with an optional timeout. Quote paths that contain spaces. Output beyond 30000 characters is truncated. Do not use it to read, search or edit files: use the dedicated tools.',
    properties: {
      command: { type: 'string', description: 'The command to execute.' },
      timeout: { type: 'number', description: 'Optional timeout in milliseconds (up to 600000).' },
      description: { type: 'string', description: 'What the command does, in five to ten words.' },
    },
    required: ['command'],
  },
  {
    name: 'Grep',
    description: 'Searches file contents with ripgrep. Supports full regular expression syntax; filter files with glob or type. Output modes: matching lines, matching file paths, or counts.',
    properties: {
      pattern: { type: 'string', description: 'The regular expression to search for.' },
      path: { type: 'string', description: 'File or directory to search in (default: the working directory).' },
      glob: { type: 'string', description: 'Glob pattern to filter files (e.g. "*.ts").' },
      output_mode: { type: 'string', enum: ['content', 'files_with_matches', 'count'] },
      '-n': { type: 'boolean', description: 'Show line numbers.' },
    },
    required: ['pattern'],
  },
  {
    name: 'Glob',
    description: 'Fast file pattern matching for any codebase size. Returns matching file paths sorted by modification time.',
    properties: { pattern: { type: 'string', description: 'The glob pattern, e.g. "src/**/*.ts".' }, path: { type: 'string', description: 'The directory to search in.' } },
    required: ['pattern'],
  },
  {
    name: 'TodoWrite',
    description: 'Creates and updates a structured task list for the current session, to track progress on a task of several steps and show it to the user.',
    properties: {
      todos: {
        type: 'array',
        items: {
          type: 'object',
          properties: { content: { type: 'string', minLength: 1 }, status: { type: 'string', enum: ['pending', 'in_progress', 'completed'] }, activeForm: { type: 'string', minLength: 1 } },
          required: ['content', 'status', 'activeForm'],
        },
      },
    },
    required: ['todos'],
  },
];

interface Round {
  say: string;
  tool: string;
  input: Record<string, unknown>;
  output: string;
}

const TASK = 'The rate limiter lets a burst through after a key has been idle for a long time: it refills more tokens than `burst`. Find the bug and fix it, then run the tests.';
const FILE = '/home/dev/service/src/rate-limiter.ts';
const ROUNDS: Round[] = [
  {
    say: 'I\'ll look for the rate limiter first.',
    tool: 'Grep',
    input: { pattern: 'class RateLimiter', output_mode: 'files_with_matches' },
    output: `Found 1 file\n${FILE}`,
  },
  { say: 'Reading it.', tool: 'Read', input: { file_path: FILE }, output: material('src/rate-limiter.ts.txt') },
  {
    say: 'The refill is not capped at the burst size; capping it.',
    tool: 'Edit',
    input: { file_path: FILE, old_string: 'bucket.tokens += elapsed * this.rate;', new_string: 'bucket.tokens = Math.min(this.burst, bucket.tokens + elapsed * this.rate);' },
    output: `The file ${FILE} has been updated. Here's the result of running \`cat -n\` on a snippet of the edited file (edit ${ID_PLACEHOLDER}).`,
  },
];

const toolId = (i: number) => `toolu_01Bench${String(i).padStart(4, '0')}`;

/** What both shapes share: the model, the answer's limit and the session's user. */
export interface RequestShape {
  model: string;
  stream: boolean;
}

const MAX_TOKENS = 32_000;
const USER_ID = 'user_bench_account__session_4b1f0c9e';

/** The turn as Anthropic's Messages API takes it (the body Claude Code posts to /v1/messages). */
export function messagesRequest({ model, stream }: RequestShape): Record<string, unknown> {
  const messages: Record<string, unknown>[] = [{ role: 'user', content: [{ type: 'text', text: TASK }] }];
  ROUNDS.forEach((r, i) => {
    messages.push({ role: 'assistant', content: [{ type: 'text', text: r.say }, { type: 'tool_use', id: toolId(i), name: r.tool, input: r.input }] });
    const last = i === ROUNDS.length - 1;
    messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: toolId(i), content: r.output, ...(last ? { cache_control: EPHEMERAL } : {}) }] });
  });
  return {
    model,
    max_tokens: MAX_TOKENS,
    system: [
      { type: 'text', text: SYSTEM_INTRO },
      { type: 'text', text: SYSTEM_RULES, cache_control: EPHEMERAL },
    ],
    tools: TOOLS.map((t, i) => ({
      name: t.name,
      description: t.description,
      input_schema: { type: 'object', properties: t.properties, required: t.required, additionalProperties: false },
      ...(i === TOOLS.length - 1 ? { cache_control: EPHEMERAL } : {}),
    })),
    messages,
    metadata: { user_id: USER_ID },
    temperature: 1,
    stream,
  };
}

/** The same turn as Chat Completions takes it, for the same Claude model (an OpenAI-SDK client of the gateway). */
export function chatRequest({ model, stream }: RequestShape): Record<string, unknown> {
  const messages: Record<string, unknown>[] = [
    {
      role: 'system',
      content: [
        { type: 'text', text: SYSTEM_INTRO },
        { type: 'text', text: SYSTEM_RULES, cache_control: EPHEMERAL },
      ],
    },
    { role: 'user', content: TASK },
  ];
  ROUNDS.forEach((r, i) => {
    messages.push({ role: 'assistant', content: r.say, tool_calls: [{ id: toolId(i), type: 'function', function: { name: r.tool, arguments: JSON.stringify(r.input) } }] });
    const last = i === ROUNDS.length - 1;
    messages.push({ role: 'tool', tool_call_id: toolId(i), content: [{ type: 'text', text: r.output, ...(last ? { cache_control: EPHEMERAL } : {}) }] });
  });
  return {
    model,
    max_tokens: MAX_TOKENS,
    messages,
    tools: TOOLS.map((t, i) => ({
      type: 'function',
      function: { name: t.name, description: t.description, parameters: { type: 'object', properties: t.properties, required: t.required, additionalProperties: false } },
      ...(i === TOOLS.length - 1 ? { cache_control: EPHEMERAL } : {}),
    })),
    user: USER_ID,
    temperature: 1,
    stream,
    ...(stream ? { stream_options: { include_usage: true } } : {}),
  };
}

/** What the section says about the request: its tools, turns, breakpoints and size. */
export const REQUEST_SHAPE = `a system prompt of two text blocks (${SYSTEM_INTRO.length + SYSTEM_RULES.length} characters), ${TOOLS.length} tools with JSON Schemas, the task and ${ROUNDS.length} tool-use rounds (search, read a ${material('src/rate-limiter.ts.txt').length}-character file, edit), 3 cache_control breakpoints (system, last tool, last tool result), max_tokens ${MAX_TOKENS}`;

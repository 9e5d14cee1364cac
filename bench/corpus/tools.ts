/** The coding agent's tools, as OpenAI function definitions (what the sessions send as `tools`). */
const fn = (name: string, description: string, properties: Record<string, unknown>, required: string[]) => ({
  type: 'function',
  function: { name, description, parameters: { type: 'object', properties, required, additionalProperties: false } },
});

const path = { type: 'string', description: 'Path relative to the repository root.' };

export const CODING_TOOLS = [
  fn('read_file', 'Read a text file. Lines are numbered; use offset and limit for large files.', { path, offset: { type: 'integer' }, limit: { type: 'integer' } }, ['path']),
  fn('write_file', 'Create or overwrite a file with the given content.', { path, content: { type: 'string' } }, ['path', 'content']),
  fn(
    'edit_file',
    'Replace one exact occurrence of old_string with new_string in a file. Fails if old_string is absent or ambiguous.',
    { path, old_string: { type: 'string' }, new_string: { type: 'string' } },
    ['path', 'old_string', 'new_string'],
  ),
  fn('bash', 'Run a shell command in the repository and return its combined output and exit code.', { command: { type: 'string' }, timeout_ms: { type: 'integer' } }, ['command']),
  fn('search', 'Search file contents with a regular expression (ripgrep).', { pattern: { type: 'string' }, glob: { type: 'string' } }, ['pattern']),
  fn('list_dir', 'List a directory.', { path }, ['path']),
];

export const DATA_TOOLS = [
  fn('run_python', 'Run Python in a persistent Jupyter kernel; returns stdout, the last value and errors.', { code: { type: 'string' } }, ['code']),
  fn('sql_query', 'Run a read-only SQL query against the analytics replica.', { sql: { type: 'string' } }, ['sql']),
];

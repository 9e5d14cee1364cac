/**
 * The `tool-output` strategy (aggressive): a tool output longer than
 * `OVER` characters keeps its head and its tail (where a command's
 * invocation and its summary or error usually are), each about `KEEP`
 * characters cut at line ends, with a marker saying how much was removed.
 * Depends on the output alone, so the cut is the same on every later turn.
 */
export const TOOL_OUTPUT_CUT = { over: 8_000, keep: 2_500 } as const;

export function cutToolOutput(text: string): string {
  const { over, keep } = TOOL_OUTPUT_CUT;
  if (text.length <= over) return text;
  let headEnd = text.lastIndexOf('\n', keep);
  if (headEnd < keep / 2) headEnd = keep; // one very long line: cut inside it
  let tailStart = text.indexOf('\n', text.length - keep);
  if (tailStart < 0 || tailStart > text.length - keep / 2) tailStart = text.length - keep;
  else tailStart += 1;
  const removed = text.slice(headEnd, tailStart);
  let lines = 0;
  for (let i = removed.indexOf('\n'); i >= 0; i = removed.indexOf('\n', i + 1)) lines++;
  const marker = `[gateway: ${lines.toLocaleString('en-US')} lines (${removed.length.toLocaleString('en-US')} characters) removed from the middle of this output]`;
  return `${text.slice(0, headEnd)}\n${marker}\n${text.slice(tailStart)}`;
}

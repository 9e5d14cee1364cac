/**
 * A small script language for the corpus's sessions: each call appends the
 * messages a real agent session would hold (OpenAI chat format, tool calls
 * paired with their results), with deterministic tool call ids.
 */
export interface Transcript {
  id: string;
  kind: string;
  model: string;
  tools?: unknown[];
  messages: Record<string, unknown>[];
}

export interface ToolUse {
  name: string;
  args: Record<string, unknown>;
  output: string;
}

export class Session {
  readonly #transcript: Transcript;
  #calls = 0;

  constructor(id: string, options: { kind: string; model: string; system: string; tools?: unknown[] }) {
    this.#transcript = { id, kind: options.kind, model: options.model, ...(options.tools ? { tools: options.tools } : {}), messages: [] };
    this.#transcript.messages.push({ role: 'system', content: options.system });
  }

  user(text: string): this {
    this.#transcript.messages.push({ role: 'user', content: text });
    return this;
  }

  /** The assistant answers in words (a turn that ends the agent's loop, or a remark between tool calls). */
  say(text: string): this {
    this.#transcript.messages.push({ role: 'assistant', content: text });
    return this;
  }

  /** The assistant calls one tool (with an optional remark) and gets its output. */
  tool(name: string, args: Record<string, unknown>, output: string, remark?: string): this {
    return this.tools([{ name, args, output }], remark);
  }

  /** The assistant calls several tools at once (parallel tool calls); the results follow in order. */
  tools(uses: ToolUse[], remark?: string): this {
    const ids = uses.map(() => this.#nextId());
    this.#transcript.messages.push({
      role: 'assistant',
      content: remark ?? null,
      tool_calls: uses.map((u, i) => ({ id: ids[i], type: 'function', function: { name: u.name, arguments: JSON.stringify(u.args) } })),
    });
    for (const [i, u] of uses.entries()) this.#transcript.messages.push({ role: 'tool', tool_call_id: ids[i], content: u.output });
    return this;
  }

  build(): Transcript {
    const last = this.#transcript.messages.at(-1);
    if (last?.role !== 'assistant' || last.tool_calls) throw new Error(`${this.#transcript.id}: a session ends with the assistant's answer`);
    return this.#transcript;
  }

  /** Ids shaped like OpenAI's (`call_` and 24 characters), derived from the session and the call's number. */
  #nextId(): string {
    const n = ++this.#calls;
    let h = 2166136261;
    for (const c of `${this.#transcript.id}#${n}`) h = Math.imul(h ^ c.charCodeAt(0), 16777619) >>> 0;
    let id = '';
    for (let i = 0; i < 24; i++) {
      h = Math.imul(h ^ (h >>> 15), 2246822507) >>> 0;
      id += 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'[h % 62];
    }
    return `call_${id}`;
  }
}

/** A seeded generator (mulberry32): the corpus is the same on every build. */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

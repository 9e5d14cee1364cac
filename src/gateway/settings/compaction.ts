import { type Static, Type } from 'typebox';

/** The read tools superseded-reads looks at when a tenant names none (docs/gateway-compaction.md). */
export const DEFAULT_READ_TOOLS: readonly string[] = ['read_file', 'Read', 'view', 'cat', 'open_file', 'get_file_contents'];

/**
 * Stale tool-result clearing (mode `agent` and above) when a tenant sets
 * nothing: past 32,000 prompt tokens, results older than the 4 most recent
 * are cleared in batches of at least 16,000 tokens (why: docs/gateway-compaction.md).
 */
export const STALE_DEFAULTS = { triggerTokens: 32_000, keepResults: 4, batchTokens: 16_000 } as const;

/** A tenant's compaction: the default mode, used when a call sends no X-Gateway-Compact, and the strategies' knobs. */
export const CompactionSettings = Type.Object(
  {
    default: Type.Optional(
      Type.String({
        maxLength: 16,
        pattern: '^(off|safe|agent|aggressive|[1-9][0-9]{2,7})$',
        description: 'off, safe, agent, aggressive, or a token budget.',
      }),
    ),
    read_tools: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 64 }), {
        maxItems: 64,
        description: 'The tools whose results superseded-reads compares (names as the tool definitions give them).',
      }),
    ),
    stale_trigger_tokens: Type.Optional(
      Type.Integer({ minimum: 1_000, maximum: 10_000_000, description: 'Prompt tokens past which old tool results are cleared (agent and above).' }),
    ),
    stale_keep_results: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000, description: 'The most recent tool results never cleared.' })),
    stale_batch_tokens: Type.Optional(
      Type.Integer({ minimum: 500, maximum: 10_000_000, description: 'Tool results are cleared in batches of at least this many tokens.' }),
    ),
  },
  { additionalProperties: false },
);
export type CompactionSettings = Static<typeof CompactionSettings>;

import { type Static, Type } from 'typebox';

/** A tenant's default compaction, used when a call sends no X-Gateway-Compact. */
export const CompactionSettings = Type.Object(
  {
    default: Type.Optional(
      Type.String({ maxLength: 16, pattern: '^(off|safe|aggressive|[1-9][0-9]{2,7})$', description: 'off, safe, aggressive, or a token budget.' }),
    ),
  },
  { additionalProperties: false },
);
export type CompactionSettings = Static<typeof CompactionSettings>;

import { type Static, Type } from 'typebox';

/** Limits of a tenant or of one API key; an unset field is no limit. */
export const Limits = Type.Object(
  {
    requests_per_minute: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
    tokens_per_day: Type.Optional(Type.Integer({ minimum: 1, maximum: 1e12 })),
    usd_per_month: Type.Optional(Type.Number({ minimum: 0, maximum: 1e9 })),
  },
  { additionalProperties: false },
);
export type Limits = Static<typeof Limits>;

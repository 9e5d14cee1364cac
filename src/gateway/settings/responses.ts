import { type Static, Type } from 'typebox';

const DAY_MS = 86_400_000;

/** How long a stored response is kept when the tenant sets nothing: OpenAI keeps its own 30 days. */
export const DEFAULT_RESPONSE_RETENTION_DAYS = 30;

/**
 * A tenant's Responses API state (surfaces/responses/store.ts): how long the
 * responses it stores (`store: true`, the API's default) stay available to
 * `previous_response_id`, `GET /v1/responses/{id}` and its input items.
 */
export const ResponsesSettings = Type.Object(
  {
    retention_days: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 3650,
        description: `Days a stored response is kept, then purged (default ${DEFAULT_RESPONSE_RETENTION_DAYS}). Applies to responses stored from then on.`,
      }),
    ),
  },
  { additionalProperties: false },
);
export type ResponsesSettings = Static<typeof ResponsesSettings>;

/** The retention of a response stored now, in milliseconds, from the tenant's settings. */
export function responseRetentionMs(settings: { responses?: ResponsesSettings | undefined }): number {
  return (settings.responses?.retention_days ?? DEFAULT_RESPONSE_RETENTION_DAYS) * DAY_MS;
}

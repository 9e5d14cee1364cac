import { type Static, Type } from 'typebox';
import { PROVIDER_MODEL } from './routing.ts';

/** Most aliases a tenant keeps: each call may compare its model with every pattern. */
export const MAX_ALIASES = 100;

/**
 * An alias's name: visible ASCII (it reaches X-Gateway-Route-Reason), up to
 * 256 characters as a model name is, with `*` only as its last character
 * (a prefix pattern: `claude-*`; `*` alone is every name). Never `auto`,
 * which names routing itself.
 */
const ALIAS_NAME = '^(?!auto$)[\\x21-\\x29\\x2b-\\x7e]{0,255}\\*?$';

/** What an alias names: `provider/model` with a provider of the registry, or `auto`. */
const ALIAS_TARGET = `^(?:auto|${PROVIDER_MODEL})$`;

/**
 * A tenant's model names (docs/gateway-routing.md#model-aliases). `aliases`
 * maps a name clients send, or a prefix pattern ending in `*`, to the model
 * the gateway calls instead, as if the client had named it: an exact name
 * beats a pattern, the longest pattern wins.
 */
export const ModelsSettings = Type.Object(
  {
    aliases: Type.Optional(
      Type.Record(
        Type.String(),
        Type.String({ pattern: ALIAS_TARGET, description: 'A model as `provider/model` (e.g. `openai/gpt-5-mini`), or `auto`.' }),
        {
          maxProperties: MAX_ALIASES,
          propertyNames: {
            minLength: 1,
            maxLength: 256,
            pattern: ALIAS_NAME,
            description: 'A model name as clients send it, or a prefix ending in `*` (e.g. `claude-*`); not `auto`.',
          },
          description: `Model aliases, name -> model: at most ${MAX_ALIASES}. An exact name beats a pattern, the longest pattern wins.`,
        },
      ),
    ),
  },
  { additionalProperties: false },
);
export type ModelsSettings = Static<typeof ModelsSettings>;

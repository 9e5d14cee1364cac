import type { ModelsSettings } from '../settings/models.ts';
import { AUTO_MODEL } from './auto-model.ts';

/** An alias that applies to a call: the alias as the tenant wrote it, and the model it names. */
export interface AppliedAlias {
  /** The exact name or the pattern (`claude-*`): settings text, visible ASCII, safe in a header. */
  name: string;
  /** `provider/model` or `auto`. */
  target: string;
}

/**
 * A tenant's model aliases (settings.models.aliases), ready to match: exact
 * names in a map, patterns longest prefix first. A lookup is one map get,
 * then one `startsWith` per pattern until the first that matches: linear in
 * the patterns' length, at most 100 of at most 256 characters.
 */
export class ModelAliases {
  readonly #exact = new Map<string, AppliedAlias>();
  readonly #patterns: { prefix: string; alias: AppliedAlias }[] = [];

  constructor(settings: ModelsSettings | undefined) {
    for (const [name, target] of Object.entries(settings?.aliases ?? {})) {
      if (name.endsWith('*')) this.#patterns.push({ prefix: name.slice(0, -1), alias: { name, target } });
      else this.#exact.set(name, { name, target });
    }
    // Longest first, so the first match is the most specific; equal prefixes cannot occur (they are one key).
    this.#patterns.sort((a, b) => b.prefix.length - a.prefix.length);
  }

  get size(): number {
    return this.#exact.size + this.#patterns.length;
  }

  /** The alias for a model name a client sent, if any; `auto` is never aliased (it names routing itself). */
  match(model: string): AppliedAlias | undefined {
    if (model === AUTO_MODEL) return undefined;
    const exact = this.#exact.get(model);
    if (exact !== undefined) return exact;
    for (const p of this.#patterns) if (model.startsWith(p.prefix)) return p.alias;
    return undefined;
  }
}

/** X-Gateway-Route-Reason's part for an alias: `alias claude-haiku-4-5 -> openai/gpt-5-mini`. */
export const aliasReason = (alias: AppliedAlias): string => `alias ${alias.name} -> ${alias.target}`;

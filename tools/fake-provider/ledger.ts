/**
 * What the fake billed: the token counts of every answer it gave, summed per
 * model, in the gateway's TokenUsage shape (promptTokens includes the cached
 * and written ones), so a benchmark can price them with the catalog and
 * compare what a client paid with and without the gateway, independently of
 * what the gateway claims.
 */
export interface BilledTokens {
  calls: number;
  promptTokens: number;
  cachedTokens: number;
  cacheWriteTokens: number;
  completionTokens: number;
  reasoningTokens: number;
}

export class UsageLedger {
  readonly #byModel = new Map<string, BilledTokens>();

  add(model: string, usage: Omit<BilledTokens, 'calls'>): void {
    let row = this.#byModel.get(model);
    if (!row) {
      row = { calls: 0, promptTokens: 0, cachedTokens: 0, cacheWriteTokens: 0, completionTokens: 0, reasoningTokens: 0 };
      this.#byModel.set(model, row);
    }
    row.calls++;
    row.promptTokens += usage.promptTokens;
    row.cachedTokens += usage.cachedTokens;
    row.cacheWriteTokens += usage.cacheWriteTokens;
    row.completionTokens += usage.completionTokens;
    row.reasoningTokens += usage.reasoningTokens;
  }

  /** Totals by the model named in the requests. */
  byModel(): ReadonlyMap<string, Readonly<BilledTokens>> {
    return this.#byModel;
  }

  clear(): void {
    this.#byModel.clear();
  }
}

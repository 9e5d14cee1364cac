import type { LimitKind } from '../settings/limits.ts';
import {
  admits,
  type Amounts,
  type BudgetLedger,
  type CounterSpec,
  type CounterState,
  counterName,
  isSeeded,
  type Reservation,
  type ReserveOutcome,
  type SeedCounter,
} from './ledger.ts';

/** One counter in its current window. */
interface Cell {
  windowId: number;
  used: number;
  reserved: number;
  /** Calls holding a reservation here: at 0, `reserved` is set back to exactly 0 (no floating-point residue). */
  holders: number;
  seeded: boolean;
  seeding: Promise<void> | undefined;
}

/**
 * The ledger of a single process (no REDIS_URL, or Redis unreachable).
 * Check and reserve run in one synchronous block, which is atomic in
 * Node. Counters of tokens and USD start each window from the usage
 * records (seeded on first use), so a restart does not hand a tenant a
 * fresh day or month; requests per minute start at 0. Nothing here needs
 * a timer: a reservation lives exactly as long as its call, which settles
 * in a `finally`.
 */
export class MemoryLedger implements BudgetLedger {
  readonly #cells = new Map<string, Cell>();
  readonly #seed: SeedCounter;

  constructor(seed: SeedCounter) {
    this.#seed = seed;
  }

  reserve(counters: readonly CounterSpec[], estimate: Amounts, _now: number): ReserveOutcome | Promise<ReserveOutcome> {
    // Every cell seeded (all but a window's first calls): checked and reserved at once, no promise made.
    const cells = this.#seededCells(counters);
    if (cells !== undefined) return this.#reserveIn(cells, counters, estimate);
    return this.#cellsFor(counters).then((seeded) => this.#reserveIn(seeded, counters, estimate));
  }

  /** Check and reserve in one synchronous block: no other call can slip in between the checks and the reservation. */
  #reserveIn(cells: Cell[], counters: readonly CounterSpec[], estimate: Amounts): ReserveOutcome {
    for (let i = 0; i < counters.length; i++) {
      const counter = counters[i]!;
      const cell = cells[i]!;
      if (!admits(counter.limit, cell, estimate[counter.kind])) return { ok: false, counter, state: stateOf(cell) };
    }
    for (let i = 0; i < counters.length; i++) {
      const cell = cells[i]!;
      cell.reserved += estimate[counters[i]!.kind];
      cell.holders++;
    }
    return { ok: true, reservation: new MemoryReservation(cells, counters.map((c) => c.kind), estimate), states: cells.map(stateOf) };
  }

  /** The cells of these counters when every one is seeded already, else undefined. */
  #seededCells(counters: readonly CounterSpec[]): Cell[] | undefined {
    const cells: Cell[] = [];
    for (const counter of counters) {
      const cell = this.#cell(counter);
      if (!cell.seeded) return undefined;
      cells.push(cell);
    }
    return cells;
  }

  async read(counters: readonly CounterSpec[], _now: number): Promise<CounterState[]> {
    return (await this.#cellsFor(counters)).map(stateOf);
  }

  /** The cells of these counters, each seeded (a seed is loaded once per cell, by whichever call comes first). */
  async #cellsFor(counters: readonly CounterSpec[]): Promise<Cell[]> {
    for (;;) {
      const cells = counters.map((c) => this.#cell(c));
      const pending = cells.filter((cell) => !cell.seeded);
      if (pending.length === 0) return cells;
      await Promise.all(cells.map((cell, i) => (cell.seeded ? undefined : this.#seedCell(cell, counters[i]!))));
    }
  }

  #cell(counter: CounterSpec): Cell {
    const name = counterName(counter);
    let cell = this.#cells.get(name);
    // A call whose clock reading is a little older than the newest cell's counts in the newer window.
    if (cell === undefined || cell.windowId < counter.window.id) {
      cell = { windowId: counter.window.id, used: 0, reserved: 0, holders: 0, seeded: !isSeeded(counter.kind), seeding: undefined };
      this.#cells.set(name, cell);
    }
    return cell;
  }

  #seedCell(cell: Cell, counter: CounterSpec): Promise<void> {
    cell.seeding ??= this.#seed(counter).then(
      (spent) => {
        cell.used += spent;
        cell.seeded = true;
      },
      (err: unknown) => {
        // The next call tries again.
        cell.seeding = undefined;
        throw err;
      },
    );
    return cell.seeding;
  }
}

class MemoryReservation implements Reservation {
  readonly #cells: Cell[];
  readonly #kinds: LimitKind[];
  readonly #estimate: Amounts;
  #settled = false;

  constructor(cells: Cell[], kinds: LimitKind[], estimate: Amounts) {
    this.#cells = cells;
    this.#kinds = kinds;
    this.#estimate = estimate;
  }

  settle(actual: Amounts): void {
    if (this.#settled) return;
    this.#settled = true;
    for (let i = 0; i < this.#cells.length; i++) {
      const cell = this.#cells[i]!;
      const kind = this.#kinds[i]!;
      cell.holders--;
      cell.reserved = cell.holders === 0 ? 0 : cell.reserved - this.#estimate[kind];
      cell.used += actual[kind];
    }
  }
}

const stateOf = (cell: Cell): CounterState => ({ used: cell.used, reserved: cell.reserved });

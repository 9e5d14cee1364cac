/**
 * Sign-in attempts for one email address take turns in this process: at most
 * `limit` (AUTH_LOCKOUT_FAILURES) run at once, the others wait here, in order,
 * before they take their place in the database's count (login-failures.ts).
 * The count alone would refuse every attempt past the allowance while the
 * first ones are in bcrypt, so a burst of right passwords (a product signing
 * one user in from several workers, the login benchmark's 8 connections)
 * would be partly refused; waiting costs them one bcrypt time instead, which
 * they would spend in the bcrypt queue anyway (passwords.ts). Wrong passwords
 * gain nothing: each one, in its turn, still takes its place in the count or
 * is refused by it. The count stays the rule across replicas; past
 * MAX_WAITING waiting attempts for one address, an attempt goes straight to
 * the count, so a flood of one address holds no more memory here than that.
 */

/** Waiting attempts per address beyond which the next ones do not wait (the database's count answers them). */
export const MAX_WAITING = 64;

interface Turns {
  running: number;
  waiting: (() => void)[];
}

const byAddress = new Map<string, Turns>();

/** Runs `work` (take an attempt, check the password, settle) in its turn for `address`. */
export async function inTurn<T>(address: string, limit: number, work: () => Promise<T>): Promise<T> {
  let turns = byAddress.get(address);
  if (!turns) {
    turns = { running: 0, waiting: [] };
    byAddress.set(address, turns);
  }
  if (turns.running < limit) {
    turns.running++;
  } else if (turns.waiting.length < MAX_WAITING) {
    // The turn is handed over by the attempt that ends (running stays as it is).
    await new Promise<void>((resolve) => turns.waiting.push(resolve));
  } else {
    return work();
  }
  try {
    return await work();
  } finally {
    const next = turns.waiting.shift();
    if (next) next();
    else if (--turns.running === 0) byAddress.delete(address);
  }
}

/**
 * The soak's command line: `npm run soak -- --minutes 5 [--window 10]
 * [--scale 1] [--seed 1]`. Every value is bounded: a soak is minutes long,
 * never open-ended, and never a throughput blast.
 */
export interface SoakOptions {
  /** Length of the measured run, warm-up included. */
  minutes: number;
  /** One recorded window: requests, errors, p50/p99 per traffic type, memory. */
  windowSeconds: number;
  /** Multiplies every rate of the mix (1: about 35 requests a second in all). */
  scale: number;
  /** Seeds the arrivals and the choice of users, prompts and credentials, so two runs send the same mix. */
  seed: number;
}

export const DEFAULTS: SoakOptions = { minutes: 3, windowSeconds: 10, scale: 1, seed: 1 };
export const MAX_MINUTES = 60;
/** Runs this long or longer write their plot and figures into docs/ (shorter ones only into bench/results/). */
export const DOC_MINUTES = 5;

const BOUNDS: Record<keyof SoakOptions, [min: number, max: number]> = {
  minutes: [0.25, MAX_MINUTES],
  windowSeconds: [2, 60],
  scale: [0.1, 4],
  seed: [0, 2 ** 31],
};
const FLAGS: Record<string, keyof SoakOptions> = { '--minutes': 'minutes', '--window': 'windowSeconds', '--scale': 'scale', '--seed': 'seed' };

export const USAGE = `usage: npm run soak -- [--minutes N (default ${DEFAULTS.minutes}, at most ${MAX_MINUTES})] [--window SECONDS (default ${DEFAULTS.windowSeconds})] [--scale X (rates ×X, default 1, at most 4)] [--seed N]
PostgreSQL and Redis instead of SQLite and in-process stores: set AUTH_DATABASE_URL, GATEWAY_DATABASE_URL and/or REDIS_URL.`;

/** Parses argv (without node and the script); throws with a sentence naming the problem. */
export function parseOptions(argv: readonly string[]): SoakOptions {
  const options = { ...DEFAULTS };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const [flag, inline] = arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    const key = FLAGS[flag];
    if (!key) throw new Error(`unknown option "${arg}"`);
    const text = inline ?? argv[++i];
    const value = Number(text);
    const [min, max] = BOUNDS[key];
    if (text === undefined || text === '' || !Number.isFinite(value) || value < min || value > max) {
      throw new Error(`${flag} takes a number from ${min} to ${max} (got ${text === undefined ? 'nothing' : `"${text}"`})`);
    }
    options[key] = value;
  }
  if (options.minutes * 60 < 3 * options.windowSeconds) throw new Error('the run must last at least three windows');
  return options;
}

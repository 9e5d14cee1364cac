import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BCRYPT_PACKAGE } from '../../src/auth/passwords.ts';

/**
 * The bcrypt implementations the login benchmark can load, so that its bound
 * comes from the fastest of them and not only from the one the service uses:
 * a slow library would otherwise hide inside its own bound.
 *
 * Each known package is looked up in the project's node_modules and in each
 * directory of BENCH_BCRYPT_DIRS (colon-separated, each holding a
 * node_modules), e.g. one where `npm install @node-rs/bcrypt@2` was run to
 * compare a version the lock cannot hold. A package that is not there is
 * skipped and named in the report.
 */

export interface BcryptCandidate {
  /** "bcrypt 6.0.0". */
  label: string;
  /** Whether this is the package and copy the service itself loads. */
  inUse: boolean;
  /** One hash of `input` at `cost`, as the library's async API computes it. */
  hash(input: string, cost: number): Promise<string>;
}

// biome-ignore lint/suspicious/noExplicitAny: each library's own untyped module object
type Module = any;
type Hasher = (input: string, cost: number) => Promise<string>;

/** How each package's async hash is called; @node-rs/bcrypt 2 moved the cost into an options object. */
const PACKAGES: { name: string; hasher(mod: Module, major: number): Hasher }[] = [
  { name: 'bcrypt', hasher: (mod) => (input, cost) => mod.hash(input, mod.genSaltSync(cost)) },
  {
    name: '@node-rs/bcrypt',
    hasher: (mod, major) => (major >= 2 ? (input, cost) => mod.hash(input, { cost }) : (input, cost) => mod.hash(input, cost)),
  },
];

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export function loadBcryptCandidates(): { candidates: BcryptCandidate[]; notFound: string[] } {
  const extra = (process.env['BENCH_BCRYPT_DIRS'] ?? '').split(':').filter(Boolean);
  const candidates: BcryptCandidate[] = [];
  const seen = new Set<string>();
  for (const pkg of PACKAGES) {
    for (const dir of [ROOT, ...extra]) {
      const require = createRequire(join(dir, 'package.json'));
      let version: string;
      let mod: Module;
      try {
        version = (require(`${pkg.name}/package.json`) as { version: string }).version;
        mod = require(pkg.name);
      } catch {
        continue; // not installed there (or its binary does not load on this machine)
      }
      const label = `${pkg.name} ${version}`;
      if (seen.has(label)) continue;
      seen.add(label);
      candidates.push({ label, inUse: dir === ROOT && pkg.name === BCRYPT_PACKAGE, hash: pkg.hasher(mod, Number(version.split('.')[0])) });
    }
  }
  const notFound = PACKAGES.map((p) => p.name).filter((name) => !candidates.some((c) => c.label.startsWith(`${name} `)));
  return { candidates, notFound };
}

/** 44 ASCII bytes, the length and alphabet of the service's prehash (base64 of HMAC-SHA-256). */
export const HASH_INPUT = createHash('sha256').update('bench password 0123456789').digest('base64');

/**
 * Times `runs` hashes of each candidate, one hash at a time, taking the
 * candidates in turn so that drift in the machine's speed weighs on each alike.
 */
export async function timeCandidates(candidates: BcryptCandidate[], runs: number, cost: number): Promise<number[][]> {
  const ms: number[][] = candidates.map(() => []);
  for (let r = 0; r < runs; r++) {
    for (const [i, c] of candidates.entries()) {
      const t = performance.now();
      await c.hash(HASH_INPUT, cost);
      ms[i]!.push(performance.now() - t);
    }
  }
  return ms;
}

import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Thrown at start-up with every configuration problem found, one per line. */
export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

export interface RateSetting {
  points: number;
  durationSeconds: number;
}

/**
 * Reads typed settings from an environment and collects every problem, so a
 * misconfigured deployment hears about all of them at once.
 */
export class EnvReader {
  readonly problems: string[] = [];
  readonly env: Record<string, string | undefined>;
  constructor(env: Record<string, string | undefined>) {
    this.env = env;
  }

  string(name: string): string | undefined {
    const v = this.env[name]?.trim();
    return v === undefined || v === '' ? undefined : v;
  }

  int(name: string, fallback: number, min: number, max: number): number {
    const raw = this.string(name);
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min || n > max) {
      this.problems.push(`${name} must be an integer from ${min} to ${max} (got "${raw}")`);
      return fallback;
    }
    return n;
  }

  bool(name: string): boolean {
    const raw = this.string(name)?.toLowerCase();
    if (raw === undefined || raw === 'false' || raw === '0') return false;
    if (raw === 'true' || raw === '1') return true;
    this.problems.push(`${name} must be true or false (got "${raw}")`);
    return false;
  }

  url(name: string, fallback?: string): string | undefined {
    const raw = this.string(name) ?? fallback;
    if (raw === undefined) return undefined;
    if (!URL.canParse(raw)) this.problems.push(`${name} must be an absolute URL (got "${raw}")`);
    return raw.replace(/\/+$/, '');
  }

  /** A rate written as "points/seconds", e.g. "20/3600" for 20 per hour. */
  rate(name: string, fallback: RateSetting): RateSetting {
    const raw = this.string(name);
    if (raw === undefined) return fallback;
    const m = /^(\d+)\/(\d+)$/.exec(raw);
    const points = Number(m?.[1]);
    const durationSeconds = Number(m?.[2]);
    if (!m || points < 1 || durationSeconds < 1) {
      this.problems.push(`${name} must be "points/seconds" with both at least 1, e.g. "20/3600" (got "${raw}")`);
      return fallback;
    }
    return { points, durationSeconds };
  }

  require(name: string, why: string): string {
    const v = this.string(name);
    if (v === undefined) {
      this.problems.push(`${name} is required ${why}`);
      return '';
    }
    return v;
  }

  throwIfProblems(): void {
    if (this.problems.length > 0) throw new ConfigError(this.problems);
  }
}

/**
 * A development secret generated once and kept in DATA_DIR/dev-secrets.json
 * (mode 0600), so restarts keep the same API key. Never used in production.
 */
export function devSecret(dataDir: string, name: string): string {
  mkdirSync(dataDir, { recursive: true });
  const file = join(dataDir, 'dev-secrets.json');
  let secrets: Record<string, string> = {};
  try {
    secrets = JSON.parse(readFileSync(file, 'utf8')) as Record<string, string>;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const existing = secrets[name];
  if (existing) return existing;
  const value = randomBytes(32).toString('base64url');
  secrets[name] = value;
  writeFileSync(file, `${JSON.stringify(secrets, null, 2)}\n`, { mode: 0o600 });
  return value;
}

/** A 32-byte key (AES-256) from 64 hex digits or 43 base64url characters (padding allowed); undefined otherwise. */
export function parseKey(text: string): Buffer | undefined {
  if (/^[0-9a-fA-F]{64}$/.test(text)) return Buffer.from(text, 'hex');
  if (/^[A-Za-z0-9_-]{43}=?$/.test(text)) return Buffer.from(text, 'base64url');
  return undefined;
}

/**
 * Keys being retired, from `NAME_PREVIOUS` (one key, or several separated by
 * commas, each written as `parseKey` reads it): still accepted for opening
 * what they sealed while a rotation runs, never used to seal.
 */
export function parsePreviousKeys(r: { string(name: string): string | undefined; problems: string[] }, name: string, current: Buffer | undefined): Buffer[] {
  const text = r.string(`${name}_PREVIOUS`);
  if (!text) return [];
  const keys: Buffer[] = [];
  for (const part of text.split(',')) {
    const key = parseKey(part.trim());
    if (!key) r.problems.push(`${name}_PREVIOUS must be keys of 32 bytes, each written as 64 hex digits or 43 base64url characters, separated by commas`);
    else if (current?.equals(key)) r.problems.push(`${name}_PREVIOUS holds the same key as ${name}: set ${name} to the new key and ${name}_PREVIOUS to the old one`);
    else keys.push(key);
  }
  return keys;
}

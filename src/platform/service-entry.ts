import type { Migration } from 'kysely';
import { ConfigError } from './config.ts';
import type { RotationCount } from './key-rotation.ts';

export type Env = Record<string, string | undefined>;

/** A service that is listening. */
export interface StartedService {
  name: string;
  url: string;
  close(): Promise<void>;
}

/** A service whose settings were read and found sound; nothing is opened yet. */
export interface ConfiguredService {
  name: string;
  /** What `npm run migrate` opens and migrates. */
  database: { url: string | undefined; sqlitePath: string };
  migrations: Record<string, Migration>;
  /** Opens storage, starts the workers, listens and prints where. */
  start(): Promise<StartedService>;
  /** `npm run rotate-keys`: seals again under the current key what the service's retired keys sealed. */
  rotateKeys(): Promise<RotationCount[]>;
}

/** One service of the platform, as the entry points (start, migrate) list it. */
export interface ServiceEntry {
  name: string;
  /** Reads the service's settings; throws ConfigError listing every problem. */
  configure(env: Env): ConfiguredService;
}

/**
 * Configures every service before any is started, so that a deployment hears
 * about every problem of every service at once, and nothing is opened when
 * one of them is misconfigured.
 */
export function configureAll(entries: readonly ServiceEntry[], env: Env): ConfiguredService[] {
  const problems: string[] = [];
  const configured: ConfiguredService[] = [];
  for (const entry of entries) {
    try {
      configured.push(entry.configure(env));
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      problems.push(...err.problems);
    }
  }
  if (problems.length > 0) throw new ConfigError([...new Set(problems)]);
  return configured;
}

/**
 * Starts the listed services in one process (`npm start`, or one service's
 * own entry point): a configuration problem exits with EX_CONFIG and the
 * problems on stderr; SIGINT/SIGTERM close every service, the last started
 * first.
 */
export async function runServices(entries: readonly ServiceEntry[], env: Env = process.env): Promise<StartedService[]> {
  let configured: ConfiguredService[];
  try {
    configured = configureAll(entries, env);
  } catch (err) {
    exitOnConfigError(err);
  }
  const started: StartedService[] = [];
  const closeAll = async () => {
    for (const service of started.toReversed()) await service.close();
  };
  try {
    for (const service of configured) started.push(await service.start());
  } catch (err) {
    await closeAll();
    throw err;
  }
  closeOnSignals(closeAll);
  return started;
}

/** A ConfigError ends the process with its problems on stderr and exit code 78; anything else is rethrown. */
export function exitOnConfigError(err: unknown): never {
  if (err instanceof ConfigError) {
    process.stderr.write(`${err.message}\n`);
    process.exit(78); // EX_CONFIG
  }
  throw err;
}

/** Closes on SIGINT/SIGTERM: stops accepting, finishes in-flight requests and the mail pass, then exits; a second signal exits at once. */
export function closeOnSignals(close: () => Promise<void>): void {
  let closing = false;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      if (closing) process.exit(1);
      closing = true;
      close().then(
        () => process.exit(0),
        () => process.exit(1),
      );
    });
  }
}

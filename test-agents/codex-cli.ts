import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/**
 * The real Codex CLI from npm, for the opt-in agents suite
 * (`npm run test:agents`). It is hundreds of MB, so it stays out of
 * `npm ci`: installed on first use into test-agents/.cli/ (git-ignored),
 * one folder per version.
 *
 * `@openai/codex` is a Node launcher (bin/codex.js); the native binary comes
 * in the optional dependency for the platform (`@openai/codex-<os>-<arch>`,
 * an alias of `@openai/codex@<version>-<os>-<arch>`), under
 * vendor/<target triple>/, whose codex-package.json names it. The suite runs
 * that binary itself, as the launcher would (no postinstall step is needed).
 */

/** The version this suite was last run with; `CODEX_VERSION=x.y.z npm run test:agents` tries another. */
export const PINNED_VERSION = '0.171.0';

const execFileP = promisify(execFile);
const CLI_ROOT = join(dirname(fileURLToPath(import.meta.url)), '.cli');
const PACKAGE = '@openai/codex';

export interface CodexCli {
  version: string;
  /** The native binary. */
  bin: string;
}

/** Installs the CLI (first use only) and returns its native binary, checked to report the expected version. */
export async function installCodex(version = process.env['CODEX_VERSION'] || PINNED_VERSION): Promise<CodexCli> {
  // The version goes into a folder name and an npm argument: a plain x.y.z only.
  if (!/^\d{1,4}\.\d{1,4}\.\d{1,6}$/.test(version)) throw new Error(`CODEX_VERSION: expected x.y.z, got "${version}"`);
  const prefix = join(CLI_ROOT, `codex-${version}`);
  let bin = await nativeBinary(prefix);
  if (bin === undefined || !(await reports(bin, version))) {
    await mkdir(prefix, { recursive: true });
    await execFileP('npm', ['install', '--prefix', prefix, '--no-save', '--no-audit', '--no-fund', `${PACKAGE}@${version}`], { maxBuffer: 16 * 2 ** 20 });
    bin = await nativeBinary(prefix);
    if (bin === undefined) throw new Error(`no native binary of ${PACKAGE}@${version} for ${process.platform}-${process.arch} under ${prefix}`);
    if (!(await reports(bin, version))) throw new Error(`${bin} does not run as Codex ${version}`);
  }
  return { version, bin };
}

/** The binary that vendor/<triple>/codex-package.json of the platform package names (its `entrypoint`); undefined before the install. */
async function nativeBinary(prefix: string): Promise<string | undefined> {
  const vendor = join(prefix, 'node_modules', '@openai', `codex-${process.platform}-${process.arch}`, 'vendor');
  if (!existsSync(vendor)) return undefined;
  for (const triple of await readdir(vendor)) {
    const layout = join(vendor, triple, 'codex-package.json');
    if (!existsSync(layout)) continue;
    const { entrypoint } = JSON.parse(await readFile(layout, 'utf8')) as { entrypoint?: unknown };
    if (typeof entrypoint === 'string') return join(vendor, triple, entrypoint);
  }
  return undefined;
}

/** Whether `bin` runs and `--version` prints `codex-cli <version>`. */
async function reports(bin: string, version: string): Promise<boolean> {
  const home = await freshHome();
  try {
    const { stdout } = await execFileP(bin, ['--version'], { timeout: 30_000, env: isolatedEnv(home) });
    return stdout.trim() === `codex-cli ${version}`;
  } catch {
    return false;
  } finally {
    await rm(home, { recursive: true, force: true });
  }
}

/** A new home folder under test-agents/.cli/ (not the system temp dir, where Codex refuses to set up its helper commands). */
async function freshHome(): Promise<string> {
  await mkdir(CLI_ROOT, { recursive: true });
  return mkdtemp(join(CLI_ROOT, 'codex-home-'));
}

/**
 * An environment of its own: nothing inherited but PATH, so no key, base URL
 * or setting of the machine's leaks in (OPENAI_API_KEY, OPENAI_BASE_URL,
 * CODEX_*); HOME, CODEX_HOME (config, sessions, logs) and XDG_CONFIG_HOME
 * inside `home`, so that the developer's own ~/.codex (config, login) is never
 * read and nothing of the machine's is written.
 */
function isolatedEnv(home: string): Record<string, string> {
  return {
    PATH: process.env['PATH'] ?? '/usr/bin:/bin',
    HOME: home,
    CODEX_HOME: join(home, '.codex'),
    XDG_CONFIG_HOME: join(home, '.config'),
  };
}

/** The environment variable that carries the key (the provider's `env_key`). */
const KEY_VARIABLE = 'CODEX_GATEWAY_API_KEY';

/**
 * config.toml of a run: one model provider at `baseUrl` speaking the
 * Responses API (`wire_api = "responses"`, the only wire Codex has), its key
 * read from KEY_VARIABLE; the shell tool runs without asking (approval
 * `never`) in the read-only sandbox (reading is all the turn does); no
 * retries, so a request the gateway fails fails the run instead of hiding
 * behind a retry; and nothing that reaches past `baseUrl`: no update check,
 * analytics or feedback uploads, no plugin and app (connector) features
 * (with them on, 0.171 looks up api.github.com and chatgpt.com at start),
 * no history file. --strict-config makes a version that no longer knows one
 * of these keys fail instead of ignoring it.
 */
function configToml(baseUrl: string, model: string): string {
  return [
    `model = ${JSON.stringify(model)}`,
    'model_provider = "gateway"',
    'approval_policy = "never"',
    'sandbox_mode = "read-only"',
    'check_for_update_on_startup = false',
    '',
    '[features]',
    'plugins = false',
    'remote_plugin = false',
    'apps = false',
    '',
    '[analytics]',
    'enabled = false',
    '',
    '[feedback]',
    'enabled = false',
    '',
    '[history]',
    'persistence = "none"',
    '',
    '[model_providers.gateway]',
    'name = "gateway"',
    `base_url = ${JSON.stringify(baseUrl)}`,
    `env_key = "${KEY_VARIABLE}"`,
    'wire_api = "responses"',
    'request_max_retries = 0',
    'stream_max_retries = 0',
    '',
  ].join('\n');
}

/** One line of `codex exec --json` (thread.started, turn.started, item.started / item.completed, turn.completed, turn.failed, error). */
export interface CodexEvent {
  type: string;
  thread_id?: string;
  // biome-ignore lint/suspicious/noExplicitAny: the CLI's items are inspected field by field
  item?: any;
  [key: string]: unknown;
}

export interface CodexRun {
  /** The exit code (null when killed). */
  code: number | null;
  /** The JSONL events printed on stdout (lines that are not JSON are left out). */
  events: CodexEvent[];
  /** thread.started's thread_id: the session id Codex sends as the session-id header and prompt_cache_key. */
  threadId: string | undefined;
  /** The text of the last agent_message item. */
  answer: string | undefined;
  stdout: string;
  stderr: string;
}

/**
 * Runs `codex exec --json <prompt>` in `cwd` with a fresh home, pointed at
 * `baseUrl` (ending in /v1) with `apiKey` as a bearer key. `cwd` need not be
 * a git repository. Killed after `timeoutMs`.
 */
export async function runCodex(cli: CodexCli, options: { prompt: string; cwd: string; baseUrl: string; apiKey: string; model?: string; timeoutMs?: number }): Promise<CodexRun> {
  const home = await freshHome();
  const env: Record<string, string> = { ...isolatedEnv(home), [KEY_VARIABLE]: options.apiKey };
  try {
    const codexHome = env['CODEX_HOME']!;
    await mkdir(codexHome);
    await writeFile(join(codexHome, 'config.toml'), configToml(options.baseUrl, options.model ?? 'gpt-5'));
    const args = ['exec', '--json', '--strict-config', '--skip-git-repo-check', '--color', 'never', options.prompt];
    const child = spawn(cli.bin, args, { cwd: options.cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 120_000);
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once('error', reject);
      child.once('close', resolve);
    }).finally(() => clearTimeout(timer));
    const events: CodexEvent[] = [];
    for (const line of stdout.split('\n')) {
      if (!line.startsWith('{')) continue;
      try {
        events.push(JSON.parse(line) as CodexEvent);
      } catch {
        // a line that is not an event (none are expected with --json)
      }
    }
    const threadId = events.find((e) => e.type === 'thread.started')?.thread_id;
    const answer = events.findLast((e) => e.type === 'item.completed' && e.item?.type === 'agent_message')?.item.text as string | undefined;
    return { code, events, threadId, answer, stdout, stderr };
  } finally {
    await rm(home, { recursive: true, force: true });
  }
}

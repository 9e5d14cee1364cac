import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/**
 * The real Claude Code CLI from npm, for the opt-in agents suite
 * (`npm run test:agents`). It is hundreds of MB, so it stays out of
 * `npm ci`: installed on first use into test-agents/.cli/ (git-ignored),
 * one folder per version.
 *
 * npm does not run the package's postinstall unless allowed, and that
 * script (install.cjs) is what puts the native binary of the platform
 * package (@anthropic-ai/claude-code-<os>-<arch>, an optional dependency)
 * in place of the bin/claude.exe stub; so the setup runs it itself, which
 * is harmless when npm already did.
 */

/** The version this suite was last run with; `CLAUDE_CODE_VERSION=x.y.z npm run test:agents` tries another. */
export const PINNED_VERSION = '2.1.332';

const execFileP = promisify(execFile);
const CLI_ROOT = join(dirname(fileURLToPath(import.meta.url)), '.cli');
const PACKAGE = '@anthropic-ai/claude-code';

export interface ClaudeCli {
  version: string;
  /** The native binary. */
  bin: string;
}

/** Installs the CLI (first use only) and returns its binary, checked to report the expected version. */
export async function installClaudeCode(version = process.env['CLAUDE_CODE_VERSION'] || PINNED_VERSION): Promise<ClaudeCli> {
  // The version goes into a folder name and an npm argument: a plain x.y.z only.
  if (!/^\d{1,4}\.\d{1,4}\.\d{1,6}$/.test(version)) throw new Error(`CLAUDE_CODE_VERSION: expected x.y.z, got "${version}"`);
  const prefix = join(CLI_ROOT, `claude-code-${version}`);
  const packageDir = join(prefix, 'node_modules', ...PACKAGE.split('/'));
  const bin = join(packageDir, 'bin', 'claude.exe');
  if (!(await reports(bin, version))) {
    await mkdir(prefix, { recursive: true });
    await execFileP('npm', ['install', '--prefix', prefix, '--no-save', '--no-audit', '--no-fund', `${PACKAGE}@${version}`], { maxBuffer: 16 * 2 ** 20 });
    await execFileP(process.execPath, [join(packageDir, 'install.cjs')], { cwd: packageDir });
    if (!(await reports(bin, version))) throw new Error(`${bin} does not run as Claude Code ${version} after install.cjs`);
  }
  return { version, bin };
}

/** Whether `bin` exists and `--version` prints `version` (the stub left by a skipped install.cjs does not). */
async function reports(bin: string, version: string): Promise<boolean> {
  if (!existsSync(bin)) return false;
  try {
    const { stdout } = await execFileP(bin, ['--version'], { timeout: 30_000, env: isolatedEnv(tmpdir()) });
    return stdout.startsWith(`${version} `);
  } catch {
    return false;
  }
}

/**
 * An environment of its own: nothing inherited but PATH, so no key,
 * base URL or setting of the machine's leaks in; HOME, the config dir
 * (CLAUDE_CONFIG_DIR), XDG_CONFIG_HOME and the CLI's temp dir inside `home`,
 * so that nothing of the machine's is read or written; no auto-update, no
 * telemetry, no error reports, no non-essential traffic (offline).
 */
function isolatedEnv(home: string): Record<string, string> {
  return {
    PATH: process.env['PATH'] ?? '/usr/bin:/bin',
    HOME: home,
    CLAUDE_CONFIG_DIR: join(home, '.claude'),
    XDG_CONFIG_HOME: join(home, '.config'),
    CLAUDE_CODE_TMPDIR: join(home, 'tmp'),
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_ERROR_REPORTING: '1',
  };
}

export interface ClaudeRun {
  /** The exit code (null when killed). */
  code: number | null;
  /** `--output-format json`'s result object (undefined when stdout was not JSON). */
  // biome-ignore lint/suspicious/noExplicitAny: the CLI's result is inspected field by field
  json: any;
  stdout: string;
  stderr: string;
}

/**
 * Runs `claude -p <prompt> --output-format json` in `cwd` with a fresh
 * temporary home, pointed at `baseUrl` with `auth`: `apiKey` is sent as
 * x-api-key (ANTHROPIC_API_KEY), `authToken` as a bearer token
 * (ANTHROPIC_AUTH_TOKEN); no retries. Read is allowed up front (it is allowed in the
 * working directory anyway; this keeps a future default from prompting).
 * Killed after `timeoutMs`.
 */
export async function runClaude(
  cli: ClaudeCli,
  options: { prompt: string; cwd: string; baseUrl: string; auth: { apiKey: string } | { authToken: string }; timeoutMs?: number },
): Promise<ClaudeRun> {
  const home = await mkdtemp(join(tmpdir(), 'claude-home-'));
  await mkdir(join(home, 'tmp'));
  const env = {
    ...isolatedEnv(home),
    ANTHROPIC_BASE_URL: options.baseUrl,
    ...('apiKey' in options.auth ? { ANTHROPIC_API_KEY: options.auth.apiKey } : { ANTHROPIC_AUTH_TOKEN: options.auth.authToken }),
    // No retries: a request the gateway fails must fail the run, not hide behind a retry (and a failing run ends fast).
    CLAUDE_CODE_MAX_RETRIES: '0',
  };
  try {
    const child = spawn(cli.bin, ['-p', options.prompt, '--output-format', 'json', '--allowedTools', 'Read'], { cwd: options.cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
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
    let json: unknown;
    try {
      json = JSON.parse(stdout);
    } catch {
      json = undefined;
    }
    return { code, json, stdout, stderr };
  } finally {
    await rm(home, { recursive: true, force: true });
  }
}

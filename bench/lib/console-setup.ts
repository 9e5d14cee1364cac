import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { TestSmtpServer } from '../../test/helpers/smtp.ts';
import type { ChildServer } from './children.ts';
import type { Landmarks } from './console-seed.ts';
import { fmt } from './format.ts';

/**
 * What the console benchmark (bench/benchmarks/console-pages.ts) does before
 * it measures: seed the database in a child process, make a PostgreSQL
 * schema for it, sign in to the console over HTTP as a browser does, and
 * check the usage API's totals against what was seeded.
 */

/** Seeding stops the part when it takes longer (here SQLite takes about 75 s, PostgreSQL about 150 s). */
export const SEED_LIMIT_MS = 480_000;

export const SERVER = new URL('../servers/console-server.ts', import.meta.url);

export interface Seeded {
  seededAt: number;
  seconds: number;
  analyzeSeconds: number;
  records: number;
  tenant: { id: string; email: string; keyIds: string[] };
  landmarks: Landmarks;
}

/** The seeding child: runs to its end, its one JSON line on stdout. */
export function seed(env: Record<string, string>): Promise<Seeded> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [fileURLToPath(SERVER)], {
      env: { PATH: process.env['PATH'] ?? '', ...env, BENCH_CONSOLE_MODE: 'seed' },
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    const kill = () => child.kill('SIGKILL');
    process.once('exit', kill);
    const timer = setTimeout(() => {
      kill();
      reject(new Error(`console: seeding took over ${SEED_LIMIT_MS / 1000} s`));
    }, SEED_LIMIT_MS);
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      process.removeListener('exit', kill);
      if (code !== 0) return reject(new Error(`console: seeding exited with code ${code}`));
      try {
        resolve(JSON.parse(out.trim().split('\n').at(-1)!) as Seeded);
      } catch (err) {
        reject(err);
      }
    });
  });
}

/** A fresh PostgreSQL schema (selected through search_path), and how to drop it. */
export async function freshSchema(base: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const schema = `bench_console_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = async (statement: string) => {
    const client = new pg.Client({ connectionString: base });
    await client.connect();
    try {
      await client.query(statement);
    } finally {
      await client.end();
    }
  };
  await admin(`create schema ${schema}`);
  const url = new URL(base);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return { url: url.toString(), drop: () => admin(`drop schema ${schema} cascade`) };
}

const cookieOf = (setCookie: string[], name: string) => setCookie.find((c) => c.startsWith(`${name}=`))?.split(';')[0];
const csrfOf = (html: string) => {
  const token = /name="csrf" value="([^"]+)"/.exec(html)?.[1];
  if (!token) throw new Error(`console: no CSRF field in ${html.slice(0, 200)}`);
  return token;
};

/**
 * Signs in as the console does in a browser: the sign-in form, the magic link
 * emailed (received by `smtp`), its page, its form. Returns the session
 * token, which is both the console's cookie and the API's Bearer token.
 */
export async function signIn(server: ChildServer<{ url: string }>, smtp: TestSmtpServer, email: string): Promise<string> {
  const url = server.info.url;
  const form = await fetch(`${url}/sign-in`);
  const pre = cookieOf(form.headers.getSetCookie(), 'gw_console_pre');
  if (!pre) throw new Error('console: /sign-in set no pre-session cookie');
  const post = (path: string, fields: Record<string, string>) =>
    fetch(`${url}${path}`, {
      method: 'POST',
      headers: { cookie: pre, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields).toString(),
      redirect: 'manual',
    });
  const asked = await post('/sign-in', { csrf: csrfOf(await form.text()), email });
  if (asked.status !== 200) throw new Error(`console: POST /sign-in answered ${asked.status}`);
  const mail = await smtp.waitFor((m) => m.to.includes(email) && m.subject === 'Your sign-in link', 15_000);
  const link = /https?:\/\/\S+/.exec(mail.text)?.[0];
  const token = link ? new URL(link).searchParams.get('token') : null;
  if (!token) throw new Error(`console: no sign-in link in the email: ${mail.text.slice(0, 200)}`);
  const landing = await fetch(`${url}/auth/magic-link?token=${encodeURIComponent(token)}`, { headers: { cookie: pre } });
  const signed = await post('/auth/magic-link', { csrf: csrfOf(await landing.text()), token, open: 'console' });
  const session = cookieOf(signed.headers.getSetCookie(), 'gw_console');
  if (signed.status !== 303 || !session) throw new Error(`console: POST /auth/magic-link answered ${signed.status} without a session`);
  return session.slice('gw_console='.length);
}

/**
 * What the usage API reports for the tenant over everything seeded, against
 * what was seeded: the records all written, and the rollups (if any) agreeing
 * with them. Returns a sentence; `ok` false when they differ.
 */
export async function checkTotals(url: string, session: string, seed: Seeded): Promise<{ ok: boolean; text: string }> {
  const from = seed.seededAt - 31 * 86_400_000;
  const res = await fetch(`${url}/api/v1/tenant/usage?from=${from}`, { headers: { authorization: `Bearer ${session}` } });
  if (res.status !== 200) return { ok: false, text: `GET /api/v1/tenant/usage answered ${res.status}` };
  const totals = ((await res.json()) as { totals: Record<string, number> }).totals;
  const want = seed.landmarks.totals;
  const got = { requests: totals['requests'], errors: totals['errors'], cacheHits: totals['cache_hits'], dedupHits: totals['dedup_hits'], costUsd: totals['cost_usd'] };
  const ok =
    got.requests === want.requests &&
    (got.errors === undefined || got.errors === want.errors) &&
    got.cacheHits === want.cacheHits &&
    got.dedupHits === want.dedupHits &&
    Math.abs((got.costUsd ?? 0) - want.costUsd) <= 1e-6 * Math.max(1, want.costUsd);
  const share = (n: number | undefined) => `${fmt((100 * (n ?? Number.NaN)) / want.requests, 1)} %`;
  const text = ok
    ? `the usage API counts every record seeded for the tenant (${want.requests.toLocaleString('en')}; errors ${share(want.errors)}, cache hits ${share(want.cacheHits)}, dedups ${share(want.dedupHits)}, $${fmt(want.costUsd)} spent)`
    : `the usage API's totals differ from what was seeded: ${JSON.stringify(got)} against ${JSON.stringify(want)}`;
  return { ok, text };
}

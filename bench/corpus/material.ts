import { readFileSync } from 'node:fs';
import { random } from './session.ts';

/**
 * The corpus's raw material (material/: source files and logs written for
 * it) and the tool outputs made from it, the way real tools print them:
 * numbered file reads, verbose test runs with the services' JSON log lines
 * in between, grep hits, psql tables padded with spaces, Windows output
 * with CRLF. Everything is derived from a seed: the build is reproducible.
 */
const MATERIAL = new URL('material/', import.meta.url);

export function material(path: string): string {
  return readFileSync(new URL(path, MATERIAL), 'utf8');
}

/** A file as an agent's read tool shows it: right-aligned line numbers, a tab, the line. */
export function numbered(text: string, from = 1): string {
  return text
    .split('\n')
    .map((line, i) => `${String(i + from).padStart(6)}\t${line}`)
    .join('\n');
}

const TEST_NAMES = () => material('logs/test-names.txt').trim().split('\n');

/**
 * A verbose JavaScript test run over `packages` copies of the suite (a
 * monorepo), the services' JSON log lines printed between tests, failing
 * tests with their assertion diff and stack, and the summary.
 */
export function testRun(options: { seed: number; packages: string[]; failing?: string[]; logLines?: number }): string {
  const rnd = random(options.seed);
  const names = TEST_NAMES();
  const out: string[] = [`> test`, `> vitest run --reporter=verbose`, '', ` RUN  v1.6.0 /home/dev/app`, ''];
  let passed = 0;
  let failed = 0;
  const failures: string[] = [];
  for (const pkg of options.packages) {
    for (const name of names) {
      const ms = Math.floor(rnd() * 40) + 1;
      const fails = options.failing?.some((f) => name.includes(f) && pkg === options.packages[0]) ?? false;
      if (fails) {
        failed++;
        out.push(` × ${pkg}/${name} ${ms}ms`);
        failures.push(name);
      } else {
        passed++;
        out.push(` ✓ ${pkg}/${name} ${ms}ms`);
      }
      if (rnd() < (options.logLines ?? 0.3)) {
        const t = 1710408764000 + Math.floor(rnd() * 1e6);
        out.push(`stdout | ${pkg}/${name.split(' > ')[0]}.test.ts`);
        out.push(
          `{"level":30,"time":${t},"pid":${4000 + Math.floor(rnd() * 900)},"hostname":"ci-runner-7","reqId":"req-${Math.floor(rnd() * 1e6).toString(36)}","req":{"method":"POST","url":"/v1/login","remoteAddress":"127.0.0.1"},"res":{"statusCode":${rnd() < 0.8 ? 200 : 401}},"responseTime":${(rnd() * 30).toFixed(3)},"msg":"request completed"}`,
        );
        out.push('');
      }
    }
  }
  for (const name of failures) {
    out.push('', `⎯⎯⎯⎯⎯⎯⎯ Failed Tests ${failures.length} ⎯⎯⎯⎯⎯⎯⎯`, '', ` FAIL  ${options.packages[0]}/${name}`);
    out.push(`AssertionError: expected 401 to be 423 // Object.is equality`, '', '- Expected', '+ Received', '', '- 423', '+ 401', '');
    out.push(` ❯ test/${name.split(' > ')[0]}.test.ts:${40 + Math.floor(rnd() * 80)}:${9 + Math.floor(rnd() * 20)}`);
    out.push('    125|     const res = await request(app).post("/login").send(credentials);', '       |                                                        ^');
  }
  out.push('', ` Test Files  ${failed ? `${failures.length} failed | ` : ''}${options.packages.length * 9 - failures.length} passed (${options.packages.length * 9})`);
  out.push(`      Tests  ${failed ? `${failed} failed | ` : ''}${passed} passed (${passed + failed})`);
  out.push(`   Start at  09:${String(10 + Math.floor(rnd() * 40))}:${String(10 + Math.floor(rnd() * 49))}`);
  out.push(`   Duration  ${(4 + rnd() * 9).toFixed(2)}s (transform 412ms, setup 0ms, collect 2.31s, tests ${(2 + rnd() * 5).toFixed(2)}s)`, '');
  return out.join('\n');
}

/** `pytest -v` over generated test ids, then the failure report from material when asked. */
export function pytestRun(options: { seed: number; tests: number; failures: boolean }): string {
  const rnd = random(options.seed);
  const topics = ['section', 'assignment', 'string', 'list', 'bool', 'number', 'comment', 'error', 'unicode', 'nested'];
  const out = ['============================= test session starts ==============================', 'platform linux -- Python 3.12.2, pytest-8.1.1, pluggy-1.4.0 -- /home/dev/.venv/bin/python', 'cachedir: .pytest_cache', 'rootdir: /home/dev/config', 'collected ' + options.tests + ' items', ''];
  for (let i = 0; i < options.tests; i++) {
    const topic = topics[i % topics.length]!;
    const failing = options.failures && (i === 17 || i === 23);
    const name = i === 17 ? 'test_list_with_trailing_comma' : i === 23 ? 'test_string_with_hash_character' : `test_${topic}_case_${i}`;
    out.push(`tests/test_parser.py::${name} ${failing ? 'FAILED' : 'PASSED'}${' '.repeat(Math.max(1, 58 - name.length))}[${String(Math.floor(((i + 1) * 100) / options.tests)).padStart(3)}%]`);
  }
  if (options.failures) out.push('', material('logs/pytest-failure.log').trimEnd());
  const failed = options.failures ? 2 : 0;
  out.push('', `${options.failures ? 'FAILED tests/test_parser.py::test_list_with_trailing_comma - config.parser.ParseError: line 1: cannot read value \'\'\nFAILED tests/test_parser.py::test_string_with_hash_character - config.parser.ParseError: line 1: unterminated string\n' : ''}========================= ${failed ? `${failed} failed, ` : ''}${options.tests - failed} passed in ${(0.5 + rnd() * 2).toFixed(2)}s =========================`);
  return out.join('\n');
}

/** grep -rn over the material's sources: `path:line:text`. */
export function grep(pattern: RegExp, files: Record<string, string>): string {
  const hits: string[] = [];
  for (const [path, text] of Object.entries(files)) {
    for (const [i, line] of text.split('\n').entries()) if (pattern.test(line)) hits.push(`${path}:${i + 1}:${line}`);
  }
  return hits.length ? hits.join('\n') : '(no matches)';
}

/** A psql result table, columns padded with spaces as psql prints them (trailing spaces included). */
export function psqlTable(columns: string[], rows: (string | number)[][]): string {
  const widths = columns.map((c, i) => Math.max(c.length, ...rows.map((r) => String(r[i]).length)));
  const line = (cells: string[]) => ` ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} `;
  const out = [line(columns), widths.map((w) => '-'.repeat(w + 2)).join('+'), ...rows.map((r) => line(r.map(String)))];
  out.push(`(${rows.length} row${rows.length === 1 ? '' : 's'})`, '');
  return out.join('\n');
}

/** A unified diff for one replaced run of lines (the edits in these sessions are single hunks). */
export function diff(path: string, before: string, after: string): string {
  const a = before.split('\n');
  const b = after.split('\n');
  let start = 0;
  while (start < a.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const from = Math.max(0, start - 3);
  const toA = Math.min(a.length, endA + 3);
  const toB = Math.min(b.length, endB + 3);
  const out = [`diff --git a/${path} b/${path}`, 'index 3f2a9c1..8be04d7 100644', `--- a/${path}`, `+++ b/${path}`];
  out.push(`@@ -${from + 1},${toA - from} +${from + 1},${toB - from} @@`);
  for (let i = from; i < start; i++) out.push(` ${a[i]}`);
  for (let i = start; i < endA; i++) out.push(`-${a[i]}`);
  for (let i = start; i < endB; i++) out.push(`+${b[i]}`);
  for (let i = endA; i < toA; i++) out.push(` ${a[i]}`);
  return out.join('\n');
}

/** Output of a Windows shell: CRLF line ends. */
export function crlf(text: string): string {
  return text.replace(/\r?\n/g, '\r\n');
}

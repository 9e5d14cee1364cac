import { crlf, diff, material, numbered, psqlTable, pytestRun, testRun } from '../material.ts';
import { backslashes, clippy, moreQueries, moreWindows, slimImage } from './follow-ups.ts';
import { random, Session, type Transcript } from '../session.ts';
import { CODING_TOOLS } from '../tools.ts';

/** Coding-agent sessions in Python, Rust, SQL, Docker and on Windows. */

const SYSTEM = `You are an autonomous software engineer. You have a shell and file tools in the user's repository.
Read before you edit. Prefer minimal diffs. Run the relevant checks after every change and report failures honestly.`;

const exit = (output: string, code = 0) => `${output}\n[exit code ${code}]`;

export function pythonParser(): Transcript {
  let parser = material('src/parser.py');
  const s = new Session('python-parser-04', { kind: 'coding-agent', model: 'openai/gpt-5', system: SYSTEM, tools: CODING_TOOLS });
  s.user('Two parser tests fail since the list syntax change. Please fix config/parser.py (not the tests).');
  s.tool('bash', { command: 'python -m pytest -v' }, exit(pytestRun({ seed: 41, tests: 160, failures: true }), 1));
  s.tool('read_file', { path: 'config/parser.py' }, numbered(parser));
  s.tool('read_file', { path: 'tests/test_parser.py', offset: 80, limit: 25 }, numbered('def test_list_with_trailing_comma():\n    text = \'tags = ["a", "b",]\\n\'\n    result = parse(text)\n    assert result[""].values["tags"] == ["a", "b"]\n\n\ndef test_string_with_hash_character():\n    text = \'color = "#ff0000"\\n\'\n    assert parse(text)[""].values["color"] == "#ff0000"\n', 85));
  s.say('Two separate bugs: a trailing comma yields an empty item, and comments are stripped before strings are read, so `#` inside quotes cuts the line.');
  const before = parser;
  parser = parser.replace('return [parse_value(item, line_no) for item in inner.split(",")] if inner else []', 'items = [item for item in inner.split(",")]\n        if items and not items[-1].strip():\n            items.pop()\n        return [parse_value(item, line_no) for item in items]');
  s.tool('edit_file', { path: 'config/parser.py', old_string: 'return [parse_value(item, line_no) for item in inner.split(",")] if inner else []', new_string: 'items = [item for item in inner.split(",")]\n        if items and not items[-1].strip():\n            items.pop()\n        return [parse_value(item, line_no) for item in items]' }, 'Edited config/parser.py (1 replacement).');
  s.tool('bash', { command: 'python -m pytest -v' }, exit(pytestRun({ seed: 42, tests: 160, failures: true }).replace(/FAILED tests\/test_parser.py::test_list_with_trailing_comma[^\n]*\n/, ''), 1));
  s.tool('read_file', { path: 'config/parser.py' }, numbered(parser));
  parser = parser.replace('        stripped = line.split("#", 1)[0].strip()', '        stripped = strip_comment(line).strip()');
  s.tool('edit_file', { path: 'config/parser.py', old_string: '        stripped = line.split("#", 1)[0].strip()', new_string: '        stripped = strip_comment(line).strip()' }, 'Edited config/parser.py (1 replacement).');
  s.tool('edit_file', { path: 'config/parser.py', old_string: 'def lines(text: str)', new_string: 'def strip_comment(line: str) -> str:\n    in_string = False\n    for i, ch in enumerate(line):\n        if ch == \'"\' and (i == 0 or line[i - 1] != "\\\\"):\n            in_string = not in_string\n        elif ch == "#" and not in_string:\n            return line[:i]\n    return line\n\n\ndef lines(text: str)' }, 'Edited config/parser.py (1 replacement).');
  s.tool('bash', { command: 'python -m pytest -v' }, exit(pytestRun({ seed: 43, tests: 160, failures: false })));
  s.tool('bash', { command: 'python -m mypy config' }, exit('Success: no issues found in 3 source files'));
  s.tool('bash', { command: 'git diff' }, exit(diff('config/parser.py', before, parser)));
  s.say('Fixed both: a trailing comma in a list is ignored, and `#` starts a comment only outside a string (`strip_comment`). 160 tests pass, mypy is clean.');
  s.user('Does the escape handling in strip_comment cover `"a\\\\"`?');
  s.tool('bash', { command: 'python -c \'from config.parser import strip_comment; print(repr(strip_comment(r"x = \\"a\\\\\\\\\\" # c")))\'' }, exit("'x = \"a\\\\\\\\\" # c'"));
  s.say('No: an escaped backslash before the closing quote is read as an escaped quote, so the comment is kept. Counting the backslashes before the quote (odd means escaped) fixes it; shall I make that change?');
  backslashes(s, parser);
  return s.build();
}

export function rustCache(): Transcript {
  const lib = material('src/lib.rs');
  const s = new Session('rust-lru-05', { kind: 'coding-agent', model: 'anthropic/claude-sonnet-4-5', system: SYSTEM, tools: CODING_TOOLS });
  s.user('cargo check fails after my refactor of LruCache::get. Make it compile without changing the public API.');
  const broken = lib.replace('        let index = *self.map.get(key)?;\n        self.detach(index);\n        self.push_front(index);\n        Some(&self.entries[index].value)', '        let index = *self.map.get(key)?;\n        let entry = &self.entries[index];\n        self.detach(index);\n        Some(&entry.value)');
  for (let i = 0; i < 3; i++) {
    s.tool('bash', { command: 'cargo check' }, exit(material('logs/cargo-errors.log'), 101), i ? 'Same errors; the previous edit did not apply because the file changed on disk. Re-reading.' : undefined);
    s.tool('read_file', { path: 'src/lib.rs' }, numbered(broken));
  }
  s.tool('edit_file', { path: 'src/lib.rs', old_string: '        let entry = &self.entries[index];\n        self.detach(index);\n        Some(&entry.value)', new_string: '        self.detach(index);\n        self.push_front(index);\n        Some(&self.entries[index].value)' }, 'Edited src/lib.rs (1 replacement).');
  s.tool('bash', { command: 'cargo check' }, exit(material('logs/cargo-errors.log').split('\n\n').slice(1).join('\n\n').replace('due to 2 previous errors', 'due to 1 previous error'), 101));
  s.tool('edit_file', { path: 'src/lib.rs', old_string: 'self.tail.unwrap().expect("a full cache has a tail")', new_string: 'self.tail.expect("a full cache has a tail")' }, 'Edited src/lib.rs (1 replacement).');
  s.tool('edit_file', { path: 'src/lib.rs', old_string: 'use std::fmt::Debug;\n', new_string: '' }, 'Edited src/lib.rs (1 replacement).');
  s.tool('bash', { command: 'cargo check' }, exit('    Checking pagecache v0.3.1 (/home/dev/pagecache)\n    Finished `dev` profile [unoptimized + debuginfo] target(s) in 0.84s'));
  const tests = Array.from({ length: 40 }, (_, i) => `test tests::${['get_moves_to_front', 'put_evicts_oldest', 'put_updates_value', 'capacity_one', 'many_keys'][i % 5]}_${i} ... ok`).join('\n');
  s.tool('bash', { command: 'cargo test' }, exit(`   Compiling pagecache v0.3.1 (/home/dev/pagecache)\n    Finished \`test\` profile [unoptimized + debuginfo] target(s) in 2.31s\n     Running unittests src/lib.rs (target/debug/deps/pagecache-5f1c2a9e8d7b6c4a)\n\nrunning 40 tests\n${tests}\n\ntest result: ok. 40 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s\n`));
  s.tool('read_file', { path: 'src/lib.rs' }, numbered(lib));
  s.say('It compiles and the 40 tests pass. `get` no longer holds a borrow across `detach`: it moves the entry to the front and then borrows the value. I also removed the `.unwrap()` before `.expect()` and the unused import.');
  clippy(s);
  return s.build();
}

export function ordersMigration(): Transcript {
  const schema = material('src/schema.sql');
  const rnd = random(61);
  const s = new Session('orders-migration-06', { kind: 'coding-agent', model: 'openai/gpt-4.1-mini', system: SYSTEM, tools: CODING_TOOLS });
  s.user('Orders list is slow for big customers. Look at the query plans and add what is missing, as a new migration.');
  s.tool('read_file', { path: 'db/schema.sql' }, numbered(schema));
  const rows = Array.from({ length: 25 }, (_, i) => [1000 + i, `customer${i}@example.com`, Math.floor(rnd() * 90000), `2025-0${1 + (i % 9)}-1${i % 10} 10:${10 + i}:00+00`]);
  s.tool('bash', { command: 'psql "$DATABASE_URL" -c "select c.id, c.email, count(o.id) as orders, max(o.created_at) from customers c join orders o on o.customer_id = c.id group by c.id order by orders desc limit 25"' }, exit(psqlTable(['id', 'email', 'orders', 'max'], rows)));
  const plan = (index: string) => `                                                              QUERY PLAN                                                               \n---------------------------------------------------------------------------------------------------------------------------------------\n Limit  (cost=0.43..${index ? '112.40' : '48211.77'} rows=50 width=64) (actual time=0.031..${index ? '0.412' : '431.228'} rows=50 loops=1)\n   ->  ${index ? `Index Scan using ${index} on orders` : 'Sort  (cost=48211.64..48390.12 rows=71392 width=64)'}  (actual time=0.030..${index ? '0.398' : '431.201'} rows=50 loops=1)\n${index ? "         Index Cond: (customer_id = 1003)\n         Filter: (status <> 'cancelled'::text)\n" : "         Sort Key: created_at DESC\n         Sort Method: top-N heapsort  Memory: 38kB\n         ->  Seq Scan on orders  (cost=0.00..45840.00 rows=71392 width=64) (actual time=0.012..398.877 rows=71388 loops=1)\n               Filter: ((status <> 'cancelled'::text) AND (customer_id = 1003))\n               Rows Removed by Filter: 1928612\n"} Planning Time: 0.211 ms\n Execution Time: ${index ? '0.437' : '431.260'} ms\n(${index ? 7 : 10} rows)\n`;
  const query = "explain analyze select * from orders where customer_id = 1003 and status <> 'cancelled' order by created_at desc limit 50";
  s.tool('bash', { command: `psql "$DATABASE_URL" -c "${query}"` }, exit(plan('')));
  s.tool('bash', { command: 'psql "$DATABASE_URL" -c "\\\\di orders*"' }, exit(psqlTable(['Schema', 'Name', 'Type', 'Owner', 'Table'], [['public', 'orders_customer_idx', 'index', 'app', 'orders'], ['public', 'orders_pkey', 'index', 'app', 'orders'], ['public', 'orders_status_idx', 'index', 'app', 'orders']])));
  s.say('`orders_customer_idx` exists in schema.sql but the plan does not use it: let me check whether it is valid on this database.');
  s.tool('bash', { command: 'psql "$DATABASE_URL" -c "select indexrelid::regclass, indisvalid from pg_index where indrelid = \'orders\'::regclass"' }, exit(psqlTable(['indexrelid', 'indisvalid'], [['orders_pkey', 't'], ['orders_customer_idx', 'f'], ['orders_status_idx', 't']])));
  s.tool('list_dir', { path: 'db/migrations' }, Array.from({ length: 14 }, (_, i) => `${String(i + 1).padStart(4, '0')}_${['init', 'customers', 'products', 'orders', 'order_items', 'stock', 'indexes', 'status_check', 'updated_at', 'audit', 'refunds', 'coupons', 'search', 'customer_idx'][i]}.sql`).join('\n'));
  s.tool('read_file', { path: 'db/migrations/0014_customer_idx.sql' }, numbered('CREATE INDEX CONCURRENTLY orders_customer_idx ON orders (customer_id, created_at DESC);\n'));
  s.say('The concurrent build of 0014 failed part-way (a deadlock in the deploy log), leaving an invalid index. A new migration should drop it and build it again, concurrently, with the status filter folded in.');
  s.tool('write_file', { path: 'db/migrations/0015_rebuild_customer_idx.sql', content: "-- 0014's concurrent build failed and left orders_customer_idx invalid.\nDROP INDEX CONCURRENTLY IF EXISTS orders_customer_idx;\nCREATE INDEX CONCURRENTLY orders_customer_idx ON orders (customer_id, created_at DESC) WHERE status <> 'cancelled';\n" }, 'Wrote db/migrations/0015_rebuild_customer_idx.sql (3 lines).');
  s.tool('bash', { command: 'npm run migrate' }, exit('> migrate\n> node scripts/migrate.js\n\nmigrations: 14 applied, 1 pending\napplying 0015_rebuild_customer_idx.sql ... done (41.2 s)\n'));
  s.tool('bash', { command: `psql "$DATABASE_URL" -c "${query}"` }, exit(plan('orders_customer_idx')));
  s.tool('read_file', { path: 'db/schema.sql' }, numbered(schema));
  s.tool('edit_file', { path: 'db/schema.sql', old_string: 'CREATE INDEX orders_customer_idx ON orders (customer_id, created_at DESC);', new_string: "CREATE INDEX orders_customer_idx ON orders (customer_id, created_at DESC) WHERE status <> 'cancelled';" }, 'Edited db/schema.sql (1 replacement).');
  s.say('The index from 0014 was invalid (its concurrent build had failed). Migration 0015 rebuilds it as a partial index without cancelled orders; the query goes from 431 ms to 0.44 ms. schema.sql matches.');
  moreQueries(s);
  return s.build();
}

export function dockerRetries(): Transcript {
  const s = new Session('docker-ci-07', { kind: 'coding-agent', model: 'deepseek/deepseek-chat', system: SYSTEM, tools: CODING_TOOLS });
  s.user('The image build keeps failing in CI with a network error at npm ci. Make it robust.');
  for (let i = 0; i < 4; i++) s.tool('bash', { command: 'docker build -t app:dev .' }, exit(material('logs/docker-build.log'), 1), i === 0 ? undefined : 'Retrying to see whether it is transient.');
  s.tool('read_file', { path: 'Dockerfile' }, numbered('FROM node:22-bookworm-slim AS build\nWORKDIR /app\n\nCOPY package.json package-lock.json ./\nRUN npm ci --omit=dev\n\nCOPY tsconfig.json ./\nCOPY src ./src\nRUN npm run build\n\nFROM node:22-bookworm-slim\nWORKDIR /app\nCOPY --from=build /app/node_modules ./node_modules\nCOPY --from=build /app/dist ./dist\nUSER node\nCMD ["node", "dist/server.js"]\n'));
  s.tool('bash', { command: 'npm ci' }, exit(material('logs/npm-install.log')));
  s.say('Four identical failures at the same step: ECONNRESET from the registry, not the code. I will add a cache mount and retries for npm in the Dockerfile.');
  s.tool('edit_file', { path: 'Dockerfile', old_string: 'RUN npm ci --omit=dev', new_string: 'RUN --mount=type=cache,target=/root/.npm \\\n    npm config set fetch-retries 5 && \\\n    npm config set fetch-retry-mintimeout 20000 && \\\n    npm ci --omit=dev' }, 'Edited Dockerfile (1 replacement).');
  const ok = material('logs/docker-build.log').split('#8 [build 4/7]')[0] + '#8 [build 4/7] RUN --mount=type=cache,target=/root/.npm npm config set fetch-retries 5 && ...\n#8 31.22 added 212 packages in 30s\n#8 DONE 31.9s\n\n#9 [build 5/7] COPY tsconfig.json ./\n#9 DONE 0.0s\n\n#10 [build 6/7] COPY src ./src\n#10 DONE 0.1s\n\n#11 [build 7/7] RUN npm run build\n#11 1.203 > build\n#11 1.203 > tsc -p tsconfig.build.json\n#11 DONE 6.4s\n\n#12 exporting to image\n#12 exporting layers 0.6s done\n#12 naming to docker.io/library/app:dev done\n#12 DONE 0.6s\n';
  s.tool('bash', { command: 'docker build -t app:dev .' }, exit(ok));
  s.tool('bash', { command: 'docker build -t app:dev .' }, exit(ok));
  s.tool('bash', { command: 'docker run --rm app:dev node -e "console.log(require(\'./package.json\').version)"' }, exit('Error: Cannot find module \'./package.json\'\nRequire stack:\n- /app/[eval]\n    at Module._resolveFilename (node:internal/modules/cjs/loader:1225:15)\n    at Module._load (node:internal/modules/cjs/loader:1051:27)\n    at Module.require (node:internal/modules/cjs/loader:1311:19)\n    at require (node:internal/modules/helpers:179:18)\n    at [eval]:1:13\n\nNode.js v22.14.0', 1));
  s.tool('edit_file', { path: 'Dockerfile', old_string: 'COPY --from=build /app/dist ./dist', new_string: 'COPY --from=build /app/dist ./dist\nCOPY package.json ./' }, 'Edited Dockerfile (1 replacement).');
  s.tool('bash', { command: 'docker build -t app:dev . && docker run --rm app:dev node -e "console.log(require(\'./package.json\').version)"' }, exit(`${ok}1.8.2`));
  s.say('The failures were registry resets. npm now retries five times with a 20 s floor and keeps its cache between builds (BuildKit cache mount), so a retry does not start over. I also copied package.json into the runtime image (the app reads its version from it).');
  slimImage(s);
  return s.build();
}

export function windowsCi(): Transcript {
  const s = new Session('windows-ci-08', { kind: 'coding-agent', model: 'openai/gpt-4o', system: SYSTEM, tools: CODING_TOOLS });
  s.user('Tests pass on Linux but the Windows runner fails. Here is the job; please investigate on the Windows box (PowerShell).');
  const dir = crlf(`\n    Directory: C:\\actions-runner\\_work\\app\\app\\src\n\n\nMode                 LastWriteTime         Length Name                                                                  \n----                 -------------         ------ ----                                                                  \n${['auth-service.ts', 'db.ts', 'errors.ts', 'mailer.ts', 'rate-limiter.ts', 'server.ts', 'users-routes.ts'].map((f, i) => `-a----         3/14/2025   9:${10 + i} AM           ${String(1200 + i * 517).padStart(5)} ${f.padEnd(70)}`).join('\n')}\n\n`);
  s.tool('bash', { command: 'Get-ChildItem src' }, exit(dir));
  const winLog = crlf(testRun({ seed: 81, packages: ['packages\\api', 'packages\\auth'], failing: ['renders the verification mail', 'migrations run in order'] }));
  s.tool('bash', { command: 'npm test' }, exit(winLog, 1));
  // biome-ignore lint/suspicious/noTemplateCurlyInString: quoted source and shell text, not templates
  s.tool('read_file', { path: 'src/mailer.ts' }, crlf(numbered("import { readFile } from 'node:fs/promises';\nimport { join } from 'node:path';\n\nexport async function renderVerification(token: string): Promise<string> {\n  const template = await readFile(join(__dirname, 'templates', 'verify.txt'), 'utf8');\n  return template.replace('{{link}}', `https://app.example.com/verify?token=${token}`);\n}\n")));
  s.tool('bash', { command: 'Format-Hex templates\\verify.txt | Select-Object -First 4' }, exit(crlf('\n   Label: C:\\actions-runner\\_work\\app\\app\\src\\templates\\verify.txt\n\n          Offset Bytes                                           Ascii\n                 00 01 02 03 04 05 06 07 08 09 0A 0B 0C 0D 0E 0F\n          ------ ----------------------------------------------- -----\n0000000000000000 48 69 2C 0D 0A 0D 0A 43 6C 69 63 6B 20 7B 7B 6C Hi,....Click {{l\n0000000000000010 69 6E 6B 7D 7D 20 74 6F 20 76 65 72 69 66 79 2E ink}} to verify.\n')));
  s.say('The template has CRLF line ends on Windows (git autocrlf), and the test compares with an LF string. Same for the migration files, whose checksums differ. A .gitattributes pinning LF for templates and SQL fixes both.');
  s.tool('write_file', { path: '.gitattributes', content: '* text=auto\n*.txt text eol=lf\n*.sql text eol=lf\n' }, 'Wrote .gitattributes (3 lines).');
  s.tool('bash', { command: 'git rm --cached -r . -q; git reset --hard -q; npm test' }, exit(crlf(testRun({ seed: 82, packages: ['packages\\api', 'packages\\auth'] }))));
  s.tool('bash', { command: 'Get-ChildItem src' }, exit(dir));
  s.say('Fixed by `.gitattributes`: templates and SQL are checked out with LF on every OS, so the mail test and the migration checksums agree on Windows. The suite passes on the Windows runner.');
  moreWindows(s);
  return s.build();
}

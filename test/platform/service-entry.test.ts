import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError, EnvReader } from '../../src/platform/config.ts';
import { configureAll, type ServiceEntry } from '../../src/platform/service-entry.ts';

/** A service whose only setting is `<NAME>_PORT`, required; `opened` records what was started. */
function entry(name: string, opened: string[]): ServiceEntry {
  return {
    name,
    configure(env) {
      const r = new EnvReader(env);
      const port = r.require(`${name.toUpperCase()}_PORT`, 'for this test');
      if (env['NODE_ENV'] === 'production' && !env['SMTP_HOST']) r.problems.push('SMTP_HOST is required when NODE_ENV=production');
      r.throwIfProblems();
      return {
        name,
        database: { url: undefined, sqlitePath: ':memory:' },
        migrations: {},
        async start() {
          opened.push(name);
          return { name, url: `http://127.0.0.1:${port}`, close: async () => {} };
        },
        async rotateKeys() {
          opened.push(`${name} rotation`);
          return [];
        },
      };
    },
  };
}

describe('configureAll', () => {
  test('every service is configured, in order, and nothing is started', () => {
    const opened: string[] = [];
    const configured = configureAll([entry('one', opened), entry('two', opened)], { ONE_PORT: '1', TWO_PORT: '2' });
    assert.deepEqual(configured.map((c) => c.name), ['one', 'two']);
    assert.deepEqual(opened, []);
  });

  test("the problems of every service come in one ConfigError; a shared setting's problem once", () => {
    const services = [entry('one', []), entry('two', [])];
    assert.throws(
      () => configureAll(services, { NODE_ENV: 'production' }),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError);
        assert.deepEqual(err.problems, [
          'ONE_PORT is required for this test',
          'SMTP_HOST is required when NODE_ENV=production',
          'TWO_PORT is required for this test',
        ]);
        return true;
      },
    );
  });

  test('an error that is no configuration problem is not swallowed', () => {
    const broken: ServiceEntry = {
      name: 'broken',
      configure() {
        throw new TypeError('a bug');
      },
    };
    assert.throws(() => configureAll([entry('one', []), broken], { ONE_PORT: '1' }), TypeError);
  });
});

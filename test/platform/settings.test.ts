import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { describe, test } from 'node:test';
import { EnvReader } from '../../src/platform/config.ts';
import { readSharedSettings } from '../../src/platform/settings.ts';

const OPTIONS = { prefix: 'SVC', defaultFrom: 'Service <no-reply@localhost>', mailCarries: 'sign-in links' };

function read(env: Record<string, string>) {
  const r = new EnvReader(env);
  return { settings: readSharedSettings(r, OPTIONS), problems: r.problems };
}

describe('readSharedSettings', () => {
  test('development defaults: ./data, info, no Redis, no SMTP (emails to the log), the default sender', () => {
    const { settings, problems } = read({});
    assert.deepEqual(problems, []);
    assert.deepEqual(settings, {
      production: false,
      dataDir: resolve('./data'),
      logLevel: 'info',
      redisUrl: undefined,
      smtp: undefined,
      mail: { from: 'Service <no-reply@localhost>', pollMs: 1000, maxAttempts: 10, backoffBaseMs: 30_000, backoffCapMs: 3_600_000 },
      metricsExposure: { prefix: 'SVC', port: undefined, token: undefined, onServicePort: true },
    });
  });

  test('every setting read: the unprefixed ones shared by all services, the mail worker under the prefix', () => {
    const { settings, problems } = read({
      DATA_DIR: '/srv/data',
      LOG_LEVEL: 'debug',
      REDIS_URL: 'redis://cache:6379',
      SMTP_HOST: 'smtp.example.com',
      SMTP_PORT: '465',
      SMTP_USER: 'mailer',
      SMTP_PASS: 'secret',
      SMTP_TLS_CA: '/etc/ca.pem',
      SMTP_FROM: 'Ops <ops@example.com>',
      SVC_MAIL_POLL_MS: '250',
      SVC_MAIL_MAX_ATTEMPTS: '4',
      SVC_MAIL_BACKOFF_SECONDS: '5',
      OTHER_MAIL_POLL_MS: '11',
      SVC_METRICS_PORT: '9464',
      SVC_METRICS_TOKEN: 'metrics-token-0123456789-abcdefghijklmnop',
    });
    assert.deepEqual(problems, []);
    assert.deepEqual(settings, {
      production: false,
      dataDir: '/srv/data',
      logLevel: 'debug',
      redisUrl: 'redis://cache:6379',
      smtp: { host: 'smtp.example.com', port: 465, user: 'mailer', pass: 'secret', tlsCaFile: '/etc/ca.pem' },
      mail: { from: 'Ops <ops@example.com>', pollMs: 250, maxAttempts: 4, backoffBaseMs: 5000, backoffCapMs: 3_600_000 },
      metricsExposure: { prefix: 'SVC', port: 9464, token: 'metrics-token-0123456789-abcdefghijklmnop', onServicePort: false },
    });
  });

  test('production requires SMTP_HOST, saying what would otherwise only reach the log', () => {
    const { settings, problems } = read({ NODE_ENV: 'production' });
    assert.equal(settings.production, true);
    assert.equal(settings.metricsExposure.onServicePort, false, 'production serves /metrics only behind a token or on a port of its own');
    assert.deepEqual(problems, ['SMTP_HOST is required when NODE_ENV=production (without it sign-in links are only printed to the log)']);
    assert.deepEqual(read({ NODE_ENV: 'production', SMTP_HOST: 'smtp.example.com' }).problems, []);
  });

  test('malformed values are problems, quoted back', () => {
    const { problems } = read({ SMTP_HOST: 'smtp.example.com', SMTP_PORT: '0', SVC_MAIL_MAX_ATTEMPTS: 'many', SVC_METRICS_PORT: 'x', SVC_METRICS_TOKEN: 'short' });
    assert.deepEqual(problems, [
      'SMTP_PORT must be an integer from 1 to 65535 (got "0")',
      'SVC_MAIL_MAX_ATTEMPTS must be an integer from 1 to 50 (got "many")',
      'SVC_METRICS_PORT must be an integer from 0 to 65535 (got "x")',
      'SVC_METRICS_TOKEN must be at least 32 characters',
    ]);
  });
});

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { loadAuthConfig } from '../../src/auth/config.ts';
import { ConfigError } from '../../src/platform/config.ts';

const PRODUCTION = {
  NODE_ENV: 'production',
  AUTH_API_KEY: 'k'.repeat(32),
  AUTH_ENCRYPTION_KEY: 'e'.repeat(64),
  SMTP_HOST: 'smtp.example.com',
  AUTH_BASE_URL: 'https://accounts.example.com',
  DATA_DIR: '/nonexistent-never-written',
};
const CLIENT = {
  OAUTH_CLIENT_ID: 'product-web',
  OAUTH_CLIENT_SECRET: 's'.repeat(32),
  OAUTH_CLIENT_REDIRECT_URIS: 'https://product.example/callback, https://product.example/other',
};

function problems(env: Record<string, string>): string[] {
  try {
    loadAuthConfig(env);
  } catch (err) {
    assert.ok(err instanceof ConfigError);
    return err.problems;
  }
  return [];
}

describe('OAuth settings', () => {
  test('OAuth is off unless both OAUTH_CLIENT_ID and OAUTH_CLIENT_SECRET are set', () => {
    assert.equal(loadAuthConfig(PRODUCTION).oauth, undefined);
    assert.match(problems({ ...PRODUCTION, OAUTH_CLIENT_ID: 'x' }).join('\n'), /must be set together/);
    const config = loadAuthConfig({ ...PRODUCTION, ...CLIENT });
    assert.deepEqual(config.oauth?.redirectUris, ['https://product.example/callback', 'https://product.example/other']);
    assert.equal(config.oauth?.publicEndpoints, false, 'behind the edge by default');
    assert.equal(config.oauth?.refreshGraceMs, 0, 'the strict reuse rule by default');
    assert.equal(config.oauth?.secureCookies, true);
  });

  test('OAUTH_CLIENT_METADATA_ALLOW_INSECURE is refused in production, allowed in development', () => {
    assert.match(
      problems({ ...PRODUCTION, ...CLIENT, OAUTH_CLIENT_METADATA_ALLOW_INSECURE: 'true' }).join('\n'),
      /OAUTH_CLIENT_METADATA_ALLOW_INSECURE .* refused when NODE_ENV=production/,
    );
    const dev = loadAuthConfig({ ...CLIENT, AUTH_API_KEY: 'k'.repeat(32), AUTH_ENCRYPTION_KEY: 'e'.repeat(64), OAUTH_CLIENT_METADATA_ALLOW_INSECURE: 'true' });
    assert.equal(dev.oauth?.allowInsecureMetadata, true);
    assert.equal(dev.oauth?.secureCookies, false);
  });

  test('the static client is checked: short secret, bad redirect URIs, reserved ids', () => {
    const found = problems({
      ...PRODUCTION,
      OAUTH_CLIENT_ID: 'svc_mine',
      OAUTH_CLIENT_SECRET: 'short',
      OAUTH_CLIENT_REDIRECT_URIS: 'http://product.example/cb,https://product.example/cb#frag',
    }).join('\n');
    assert.match(found, /OAUTH_CLIENT_SECRET must be at least 32 characters/);
    assert.match(found, /OAUTH_CLIENT_ID must not start with svc_/);
    assert.match(found, /"http:\/\/product.example\/cb" may use http only on a loopback address/);
    assert.match(found, /must not contain a fragment/);
    assert.match(problems({ ...PRODUCTION, ...CLIENT, OAUTH_CLIENT_REDIRECT_URIS: '' }).join('\n'), /must list at least one/);
  });

  test('the grace window is bounded', () => {
    assert.match(problems({ ...PRODUCTION, ...CLIENT, OAUTH_REFRESH_REUSE_GRACE_SECONDS: '3600' }).join('\n'), /from 0 to 300/);
    assert.equal(loadAuthConfig({ ...PRODUCTION, ...CLIENT, OAUTH_REFRESH_REUSE_GRACE_SECONDS: '10' }).oauth?.refreshGraceMs, 10_000);
  });
});

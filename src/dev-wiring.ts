import { resolve } from 'node:path';
import { ACCOUNTS_CALLBACK_PATH } from './gateway/config.ts';
import { devSecret } from './platform/config.ts';
import type { Env } from './platform/service-entry.ts';

/** The gateway console's client at the account service, in development. */
export const DEV_CONSOLE_CLIENT_ID = 'gateway-console';

/** Settings of either side of the wiring: an operator who sets any of them wires the services themselves. */
const WIRING_VARIABLES = [
  'OAUTH_CLIENT_ID',
  'OAUTH_CLIENT_SECRET',
  'OAUTH_CLIENT_REDIRECT_URIS',
  'GATEWAY_ACCOUNTS_URL',
  'GATEWAY_ACCOUNTS_CLIENT_ID',
  'GATEWAY_ACCOUNTS_CLIENT_SECRET',
];

/**
 * `npm start` in development wires the two services together, so the
 * console's "Sign in with your account" works with nothing configured: the
 * account service's static OAuth client becomes the console (a client id, a
 * secret generated once into DATA_DIR/dev-secrets.json, the console's
 * callback as its redirect URI, the OAuth endpoints public so the browser
 * reaches the sign-in and consent pages), and the gateway is given the same
 * client and the account service's URL as issuer. Only defaults are filled
 * in, before each service reads its settings: with NODE_ENV=production, or
 * when any of the variables above is set, nothing is generated and `env` is
 * returned as it is. Neither service knows of the other; this step, beside
 * the entry point that starts both (like src/services.ts), is the only place
 * that knows both.
 */
export function wireServices(env: Env): { env: Env; wired: boolean } {
  const set = (name: string) => (env[name]?.trim() ?? '') !== '';
  if (env['NODE_ENV'] === 'production' || WIRING_VARIABLES.some(set)) return { env, wired: false };
  const trim = (url: string) => url.replace(/\/+$/, '');
  const authUrl = trim(env['AUTH_BASE_URL']?.trim() || `http://localhost:${env['AUTH_PORT']?.trim() || '8080'}`);
  const gatewayUrl = trim(env['GATEWAY_BASE_URL']?.trim() || `http://localhost:${env['GATEWAY_PORT']?.trim() || '8081'}`);
  const secret = devSecret(resolve(env['DATA_DIR']?.trim() || './data'), 'GATEWAY_ACCOUNTS_CLIENT_SECRET');
  return {
    wired: true,
    env: {
      ...env,
      OAUTH_CLIENT_ID: DEV_CONSOLE_CLIENT_ID,
      OAUTH_CLIENT_SECRET: secret,
      OAUTH_CLIENT_REDIRECT_URIS: `${gatewayUrl}${ACCOUNTS_CALLBACK_PATH}`,
      OAUTH_PUBLIC_ENDPOINTS: set('OAUTH_PUBLIC_ENDPOINTS') ? env['OAUTH_PUBLIC_ENDPOINTS'] : 'true',
      GATEWAY_ACCOUNTS_URL: authUrl,
      GATEWAY_ACCOUNTS_CLIENT_ID: DEV_CONSOLE_CLIENT_ID,
      GATEWAY_ACCOUNTS_CLIENT_SECRET: secret,
    },
  };
}

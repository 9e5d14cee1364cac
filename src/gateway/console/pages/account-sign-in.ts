import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { HttpProblem } from '../../../platform/errors.ts';
import { escapeHtml } from '../../../platform/html.ts';
import type { App } from '../../../platform/http.ts';
import { AccountsClient, type AccountsMetadata } from '../../control-plane/accounts-client.ts';
import { ACCOUNTS_CALLBACK_PATH, type AccountsSignIn } from '../../config.ts';
import { tenantForVerifiedEmail } from '../../control-plane/tenants.ts';
import { SIGN_IN_TTL_MS, SignInStates } from '../account-sign-in-state.ts';
import type { ConsoleContext, ConsoleOptions } from '../console.ts';
import { startConsoleSession } from '../console-session.ts';
import { renderPage, sendConsolePage } from '../layout.ts';

/** The scope that carries the address (docs/oauth.md: userinfo requires `identity`). */
const SCOPE = 'identity';
const START_PATH = '/sign-in/account';

const Callback = Type.Object({
  code: Type.Optional(Type.String({ maxLength: 512 })),
  state: Type.Optional(Type.String({ maxLength: 512 })),
  iss: Type.Optional(Type.String({ maxLength: 1024 })),
  error: Type.Optional(Type.String({ maxLength: 128 })),
  error_description: Type.Optional(Type.String({ maxLength: 1024 })),
});

/**
 * "Sign in with your account": the console as a confidential OAuth client of
 * the account service (authorization code + PKCE S256, GATEWAY_ACCOUNTS_*),
 * plugged in through ConsoleOptions. Its button posts (CSRF-checked by the
 * sign-in scope) to START_PATH, which keeps a fresh state and PKCE verifier in
 * this browser (account-sign-in-state.ts) and redirects to the authorization
 * endpoint. The callback, in this order:
 * 1. the state cookie is cleared (one use), then must open, be unexpired and
 *    hold the returned `state` (login CSRF, a replayed or foreign callback);
 * 2. RFC 9207: `iss`, required when the server says it sends it, must be the
 *    issuer (mix-up);
 * 3. `error` (the person denied, or the server refused): a page saying so;
 * 4. the code exchanged with the verifier and the client secret, userinfo
 *    read with the token;
 * 5. the address must be verified by the account service;
 * 6. its confirmed workspace found, or created under GATEWAY_SIGNUP, an
 *    unconfirmed one holding the address released (tenants.ts
 *    tenantForVerifiedEmail);
 * 7. a console session that keeps the grant's refresh token, rechecked at
 *    the account service (accounts-session-grants.ts), and `/`. A sign-in
 *    refused at 5 or 6 revokes the grant (the gateway keeps nothing of it).
 */
export function accountSignIn(settings: AccountsSignIn): ConsoleOptions {
  const client = new AccountsClient(settings);
  return {
    signInButtons: [{ label: 'Sign in with your account', action: START_PATH, redirectsTo: [new URL(settings.issuer).origin] }],
    signInRoutes: [(app, ctx) => accountSignInRoutes(app, ctx, client)],
  };
}

async function accountSignInRoutes(app: App, ctx: ConsoleContext, client: AccountsClient): Promise<void> {
  const { deps } = ctx;
  const states = new SignInStates(deps.config.encryptionKey);
  const cookie = `${deps.config.production ? '__Host-' : ''}gw_console_oauth`;

  const refuse = (reply: FastifyReply, status: number, title: string, message: string) =>
    sendConsolePage(
      reply,
      status,
      renderPage(
        { assets: ctx.assets, title },
        `<h1>${escapeHtml(title)}</h1><p class="form-error" role="alert">${escapeHtml(message)}</p><p><a href="/sign-in">Back to sign-in</a></p>`,
      ),
    );
  const unavailable = (request: FastifyRequest, reply: FastifyReply, err: unknown) => {
    if (!(err instanceof HttpProblem)) throw err;
    const level = err.status >= 500 ? 'warn' : 'info';
    request.log[level]({ code: err.code, err: err.cause ?? err }, 'account sign-in refused');
    return refuse(reply, err.status, err.status >= 500 ? 'The account service is not available' : 'This sign-in cannot be completed', err.message);
  };

  app.post(START_PATH, { schema: { hide: true } }, async (request, reply) => {
    let metadata: AccountsMetadata;
    try {
      metadata = await client.metadata(deps.clock.now());
    } catch (err) {
      return unavailable(request, reply, err);
    }
    const { pending, sealed } = states.start(deps.clock.now());
    reply.setCookie(cookie, sealed, { ...ctx.cookies.options, maxAge: SIGN_IN_TTL_MS / 1000 });
    const target = new URL(metadata.authorizationEndpoint);
    const params = {
      response_type: 'code',
      client_id: client.settings.clientId,
      redirect_uri: client.settings.redirectUri,
      scope: SCOPE,
      state: pending.state,
      code_challenge: pending.challenge,
      code_challenge_method: 'S256',
    };
    for (const [name, value] of Object.entries(params)) target.searchParams.set(name, value);
    return reply.redirect(target.toString(), 303);
  });

  app.get(ACCOUNTS_CALLBACK_PATH, { schema: { hide: true, querystring: Callback } }, async (request, reply) => {
    const q = request.query;
    const now = deps.clock.now();
    reply.clearCookie(cookie, ctx.cookies.options);
    const found = states.finish(request.cookies[cookie], q.state ?? '', now);
    if ('refused' in found) {
      request.log.info({ code: `sign_in_state_${found.refused}` }, 'account sign-in refused');
      return refuse(
        reply,
        400,
        'This sign-in cannot be completed',
        found.refused === 'expired'
          ? 'This sign-in took longer than 10 minutes. Start again from the sign-in page.'
          : 'This sign-in was already used, or was not started in this browser. Start again from the sign-in page.',
      );
    }
    let metadata: AccountsMetadata;
    try {
      metadata = await client.metadata(now);
    } catch (err) {
      return unavailable(request, reply, err);
    }
    // RFC 9207 section 2.4: a response from another issuer (or, from one that sends it, without it) is a mix-up.
    if (q.iss !== undefined ? q.iss !== metadata.issuer : metadata.issParameter) {
      request.log.info({ code: 'sign_in_wrong_issuer' }, 'account sign-in refused');
      return refuse(reply, 400, 'This sign-in cannot be completed', 'The answer did not come from this gateway\u2019s account service. Start again from the sign-in page.');
    }
    if (q.error !== undefined) {
      request.log.info({ code: `sign_in_${q.error === 'access_denied' ? 'denied' : 'error'}` }, 'account sign-in refused');
      if (q.error === 'access_denied') {
        return refuse(reply, 403, 'You did not allow the sign-in', 'You chose not to let the AI gateway console use your account, so you are not signed in.');
      }
      return refuse(reply, 400, 'The account service did not sign you in', `The account service answered: ${q.error}${q.error_description ? ` (${q.error_description})` : ''}.`);
    }
    if (!q.code) return refuse(reply, 400, 'This sign-in cannot be completed', 'The account service sent no sign-in code. Start again from the sign-in page.');
    let who: Awaited<ReturnType<AccountsClient['identify']>>;
    try {
      who = await client.identify(metadata, q.code, found.verifier);
    } catch (err) {
      return unavailable(request, reply, err);
    }
    const dropGrant = () => (who.refreshToken ? client.revoke(metadata, who.refreshToken) : Promise.resolve());
    if (!who.emailVerified) {
      await dropGrant();
      request.log.info({ code: 'sign_in_email_unverified' }, 'account sign-in refused');
      return refuse(
        reply,
        403,
        'Verify your email address first',
        `Your account\u2019s address ${who.email} is not verified yet. Open the link in the email the account service sent you, then sign in again.`,
      );
    }
    let workspace: Awaited<ReturnType<typeof tenantForVerifiedEmail>>;
    try {
      workspace = await tenantForVerifiedEmail(deps, { email: who.email, ip: request.ip });
    } catch (err) {
      await dropGrant();
      if (err instanceof HttpProblem && err.code === 'signup_by_invitation') {
        request.log.info({ code: err.code }, 'account sign-in refused');
        return refuse(reply, 403, 'No workspace for this address', err.message);
      }
      return unavailable(request, reply, err);
    }
    await startConsoleSession(deps, request, reply, workspace.tenantId, who.refreshToken);
    request.log.info({ tenantId: workspace.tenantId, created: workspace.created, released: workspace.released }, 'console sign-in with the account service');
    return reply.redirect('/', 303);
  });
}

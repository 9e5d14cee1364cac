import cookie from '@fastify/cookie';
import type { FastifyReply } from 'fastify';
import { HttpProblem } from '../../platform/errors.ts';
import { type App, usePageErrors } from '../../platform/http.ts';
import { register, requireEmail, requirePassword } from '../accounts.ts';
import { BrowserSession, CsrfError } from '../oauth/browser-session.ts';
import type { OAuthDeps } from '../oauth/clients.ts';
import { OAuthError, param } from '../oauth/errors.ts';
import { checkEmailPage, errorPage, nothingToContinuePage, type SignInTarget, type SignUpErrors, signUpPage } from '../oauth/pages.ts';
import { findSignInTarget, pendingWithClient, targetQuery } from '../oauth/sign-in-target.ts';
import { type Continuation, SignupContinuation } from '../oauth/signup-continuation.ts';
import { requestPasswordReset } from '../password-reset.ts';
import { PASSWORD_MAX } from '../passwords.ts';

/**
 * Email (<= 1024, as POST /v1/register's schema) and two passwords (<= 512
 * characters each), percent-encoded at up to 9 bytes a character, plus the
 * CSRF token and the target: about 19 KB at worst.
 */
const BODY_LIMIT = 24 * 1024;
const EMAIL_FIELD_MAX = 1024;
/** Characters, not code points: a code point is at most 2 UTF-16 units, so this admits every valid password. */
const PASSWORD_FIELD_MAX = 2 * PASSWORD_MAX;

/**
 * The sign-up page (OAUTH_PUBLIC_ENDPOINTS=true only), beside the sign-in
 * page and built like it: the same browser session, CSRF token, headers and
 * error pages. It creates the account with register(), the function behind
 * POST /v1/register, so the password rules, address normalisation, per-IP
 * limit and verification email are the API's. An address that already has an
 * account gets the same answer (and, instead of a verification email, a note
 * with a reset link: requestPasswordReset). The page then says to check the
 * email; the verification page, in this browser, offers to continue to where
 * the sign-up was going (SignupContinuation), through the sign-in page.
 */
export async function signUpPageRoutes(app: App, deps: OAuthDeps): Promise<void> {
  await app.register(cookie);
  usePageErrors(app, (reply, status, message) => errorPage(reply, status, message));
  const session = new BrowserSession(deps);
  const continuation = new SignupContinuation({ secureCookies: deps.oauth.secureCookies, maxAgeMs: deps.config.verificationTtlMs });
  const url = (path: string, query: string) => `${deps.issuer}${path}?${query}`;
  const continuationQuery = (c: Continuation) =>
    c.kind === 'authorize' ? `request=${encodeURIComponent(c.requestId)}` : `return_to=${encodeURIComponent(c.path)}`;

  /** Never cached; a refused form (CSRF) or a malformed one (a repeated field) is an error page. */
  async function page(reply: FastifyReply, handle: () => Promise<FastifyReply>): Promise<FastifyReply> {
    reply.header('cache-control', 'no-store');
    try {
      return await handle();
    } catch (err) {
      if (err instanceof CsrfError) return errorPage(reply, 403, err.message);
      if (err instanceof OAuthError) return errorPage(reply, 400, err.message);
      throw err;
    }
  }
  const expired = (reply: FastifyReply) => errorPage(reply, 400, 'This sign-in request has expired or is unknown.');

  /** The sign-in page's target; a sign-up page opened on its own (no target named) leads to the account page. */
  async function signUpTarget(source: unknown): Promise<SignInTarget | null> {
    if (param(source, 'request') === undefined && param(source, 'return_to') === undefined) return { kind: 'return', path: '/account' };
    return findSignInTarget(deps, source);
  }

  /** The form again, with the address typed (never the passwords) and what is wrong. */
  function form(
    reply: FastifyReply,
    ctx: { csrf: string; target: SignInTarget },
    args: { status: number; email?: string; errors?: SignUpErrors; error?: string },
  ): FastifyReply {
    return signUpPage(reply, {
      ...args,
      action: `${deps.issuer}/oauth/signup`,
      target: ctx.target,
      csrf: ctx.csrf,
      signInUrl: url('/oauth/login', targetQuery(ctx.target)),
    });
  }

  app.get('/oauth/signup', { schema: { hide: true } }, async (request, reply) =>
    page(reply, async () => {
      const target = await signUpTarget(request.query);
      if (!target) return expired(reply);
      return form(reply, { csrf: session.csrfToken(request, reply), target }, { status: 200 });
    }),
  );

  app.post('/oauth/signup', { bodyLimit: BODY_LIMIT, schema: { hide: true } }, async (request, reply) =>
    page(reply, async () => {
      session.checkForm(request);
      const target = await signUpTarget(request.body);
      if (!target) return expired(reply);
      const ctx = { csrf: session.postedCsrf(request), target };
      const typed = param(request.body, 'email') ?? '';
      const password = param(request.body, 'password') ?? '';
      const confirm = param(request.body, 'confirm') ?? '';
      const email = typed.slice(0, EMAIL_FIELD_MAX);
      const errors = checkFields(typed, password, confirm);
      if (errors) return form(reply, ctx, { status: 400, email, errors });
      const normalised = requireEmail(typed);
      try {
        await register(deps, { email: typed, password, ip: request.ip });
      } catch (err) {
        if (!(err instanceof HttpProblem) || err.status >= 500) throw err;
        if (err.code === 'email_taken') {
          // The same answer as for a new address; the owner is told by email (with the same limits as "forgot password").
          await requestPasswordReset(deps, { email: normalised, ip: request.ip, occasion: 'sign-up' });
        } else {
          const field = err.errors?.[0]?.field;
          if (field === 'email' || field === 'password') return form(reply, ctx, { status: 400, email, errors: { [field]: err.message } });
          reply.headers(err.headers);
          return form(reply, ctx, { status: err.status, email, error: err.message });
        }
      }
      const where = target.kind === 'authorize' ? { kind: 'authorize' as const, requestId: target.request.id } : target;
      continuation.remember(reply, { ...where, email: normalised });
      // Post/Redirect/Get: reloading the next page must not post the form again.
      return reply.redirect(`${deps.issuer}/oauth/signup/sent`, 303);
    }),
  );

  app.get('/oauth/signup/sent', { schema: { hide: true } }, async (request, reply) =>
    page(reply, async () => {
      const c = continuation.read(request);
      if (!c) return reply.redirect(`${deps.issuer}/oauth/signup`, 303);
      const query = continuationQuery(c);
      return checkEmailPage(reply, {
        email: c.email,
        hours: Math.round(deps.config.verificationTtlMs / 3_600_000),
        // Only the service's own verification page offers "Continue".
        continues: !deps.config.verifyUrl,
        signUpUrl: url('/oauth/signup', query),
        signInUrl: url('/oauth/login', query),
      });
    }),
  );

  /** The verification page's "Continue": to the sign-in page for where the sign-up was going, if that is still live. */
  app.get('/oauth/signup/continue', { schema: { hide: true } }, async (request, reply) =>
    page(reply, async () => {
      const c = continuation.read(request);
      continuation.forget(reply);
      const live = c?.kind === 'authorize' ? (await pendingWithClient(deps, c.requestId)) !== null : c?.kind === 'return';
      if (!c || !live) return nothingToContinuePage(reply, { signInUrl: url('/oauth/login', 'return_to=%2Faccount') });
      return reply.redirect(url('/oauth/login', continuationQuery(c)), 303);
    }),
  );
}

/**
 * The fields' errors, each next to its field, or null when the form may go to
 * register(). The address and password rules are register()'s own functions,
 * run here first so that every wrong field is shown at once.
 */
function checkFields(email: string, password: string, confirm: string): SignUpErrors | null {
  const errors: SignUpErrors = {};
  if (email.trim() === '') errors.email = 'Enter your email address.';
  else if (email.length > EMAIL_FIELD_MAX) errors.email = 'The email address is not valid.';
  else errors.email = problemMessage(() => requireEmail(email));
  if (password === '') errors.password = 'Choose a password.';
  else if (password.length > PASSWORD_FIELD_MAX) errors.password = `The password must be at most ${PASSWORD_MAX} characters.`;
  else errors.password = problemMessage(() => requirePassword(password));
  if (!errors.password) {
    if (confirm === '') errors.confirm = 'Type the password again.';
    else if (confirm !== password) errors.confirm = 'The two passwords differ; type the same password twice.';
  }
  for (const key of Object.keys(errors) as (keyof SignUpErrors)[]) if (errors[key] === undefined) delete errors[key];
  return Object.keys(errors).length > 0 ? errors : null;
}

/** The message of the HttpProblem `check` throws, or undefined when it passes. */
function problemMessage(check: () => unknown): string | undefined {
  try {
    check();
    return undefined;
  } catch (err) {
    if (err instanceof HttpProblem) return err.message;
    throw err;
  }
}

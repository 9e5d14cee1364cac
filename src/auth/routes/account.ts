import { isIP } from 'node:net';
import { Type } from 'typebox';
import { fieldProblem, HttpProblem } from '../../platform/errors.ts';
import { type App, bearerToken } from '../../platform/http.ts';
import { register, resendVerification, verifyEmail } from '../accounts.ts';
import type { AuthDeps } from '../deps.ts';
import { login } from '../login.ts';
import { isSessionToken, revokeSession, userForSession } from '../sessions.ts';

export const UserSchema = Type.Object({
  id: Type.String(),
  email: Type.String(),
  email_verified: Type.Boolean(),
  created_at: Type.String({ format: 'date-time' }),
});
export const Email = Type.String({ maxLength: 1024, description: 'Normalised: trimmed, NFC, lower-cased.' });
export const Ip = Type.String({ maxLength: 64, description: "The end user's IP address, as the calling product saw it." });
export const Password = Type.String({ maxLength: 4096, description: '12 to 256 characters.' });

export function requireIp(ip: string): string {
  if (isIP(ip) === 0) throw fieldProblem('invalid_ip', 'ip', 'ip must be an IPv4 or IPv6 address.');
  return ip;
}

export function requireSessionToken(header: string | undefined): string {
  if (!header) throw new HttpProblem(401, 'invalid_session', 'Send the session token as "Authorization: Bearer <token>".');
  return header;
}

/** The account API under /v1; the caller has already passed the X-Api-Key check. */
export async function accountRoutes(app: App, deps: AuthDeps): Promise<void> {
  app.post(
    '/v1/register',
    {
      schema: {
        summary: 'Create an account and send its verification email',
        body: Type.Object({ email: Email, password: Password, ip: Ip }),
        response: { 201: Type.Object({ user: UserSchema }) },
      },
    },
    async (request, reply) => {
      const { email, password, ip } = request.body;
      const user = await register(deps, { email, password, ip: requireIp(ip) });
      return reply.status(201).send({ user });
    },
  );

  app.post(
    '/v1/verify',
    {
      schema: {
        summary: 'Verify an email address with the token from the email',
        body: Type.Object({ token: Type.String({ maxLength: 256 }) }),
        response: { 200: Type.Object({ user: UserSchema }) },
      },
    },
    async (request) => ({ user: await verifyEmail(deps, request.body.token) }),
  );

  const ResendReply = Type.Object({ ok: Type.Boolean(), detail: Type.String() });
  app.post(
    '/v1/resend-verification',
    {
      schema: {
        summary: 'Send a fresh verification email (same answer whether or not the account exists)',
        body: Type.Object({ email: Email, ip: Ip }),
        response: { 200: ResendReply },
      },
    },
    async (request) => {
      await resendVerification(deps, { email: request.body.email, ip: requireIp(request.body.ip) });
      return { ok: true, detail: 'If an unverified account exists for this address, a verification email is on its way.' };
    },
  );

  app.post(
    '/v1/login',
    {
      schema: {
        summary: 'Sign in with email and password; returns a session token',
        body: Type.Object({
          email: Email,
          password: Password,
          ip: Ip,
          user_agent: Type.Optional(Type.String({ maxLength: 1024, description: "The end user's User-Agent." })),
        }),
        response: {
          200: Type.Object({ user: UserSchema, session_token: Type.String(), expires_at: Type.String({ format: 'date-time' }) }),
        },
      },
    },
    async (request) => {
      const { email, password, ip, user_agent } = request.body;
      const result = await login(deps, {
        email,
        password,
        ip: requireIp(ip),
        userAgent: user_agent ?? request.headers['user-agent'],
      });
      return {
        user: result.user,
        session_token: result.sessionToken,
        expires_at: new Date(result.expiresAt).toISOString(),
      };
    },
  );

  app.post('/v1/logout', { schema: { summary: 'Revoke the session (idempotent)' } }, async (request, reply) => {
    const token = requireSessionToken(bearerToken(request));
    // A well-formed token is 204 whether it is live, revoked, expired or already purged: a client
    // retrying a logout must get the same answer after the purge as before it.
    if (!isSessionToken(token)) throw new HttpProblem(401, 'invalid_session', 'This is not a session token.');
    await revokeSession(deps, token);
    return reply.status(204).send();
  });

  app.get(
    '/v1/me',
    { schema: { summary: 'The signed-in user', response: { 200: Type.Object({ user: UserSchema }) } } },
    async (request) => {
      const user = await userForSession(deps, requireSessionToken(bearerToken(request)));
      if (!user) throw new HttpProblem(401, 'invalid_session', 'The session is expired, revoked or unknown.');
      return { user };
    },
  );
}

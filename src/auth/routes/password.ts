import { Type } from 'typebox';
import { type App, bearerToken } from '../../platform/http.ts';
import type { AuthDeps } from '../deps.ts';
import { changePassword } from '../password-change.ts';
import { requestPasswordReset, resetPassword } from '../password-reset.ts';
import { Email, Ip, Password, requireIp, requireSessionToken, UserSchema } from './account.ts';

/** Account recovery and password change under /v1; the caller has already passed the X-Api-Key check. */
export async function passwordRoutes(app: App, deps: AuthDeps): Promise<void> {
  const ForgotReply = Type.Object({ ok: Type.Boolean(), detail: Type.String() });
  app.post(
    '/v1/password/forgot',
    {
      schema: {
        summary: 'Email a password reset link (same answer whether or not the account exists)',
        body: Type.Object({ email: Email, ip: Ip }),
        response: { 200: ForgotReply },
      },
    },
    async (request) => {
      await requestPasswordReset(deps, { email: request.body.email, ip: requireIp(request.body.ip) });
      return { ok: true, detail: 'If an account exists for this address, a password reset email is on its way.' };
    },
  );

  app.post(
    '/v1/password/reset',
    {
      schema: {
        summary: 'Set a new password with the token from the reset email; signs out every session',
        body: Type.Object({ token: Type.String({ maxLength: 256 }), password: Password }),
        response: { 200: Type.Object({ user: UserSchema }) },
      },
    },
    async (request) => ({ user: await resetPassword(deps, request.body) }),
  );

  app.post(
    '/v1/password/change',
    {
      schema: {
        summary: "Change the signed-in user's password; signs out every other session",
        body: Type.Object({ current_password: Password, new_password: Password }),
        response: { 200: Type.Object({ user: UserSchema }) },
      },
    },
    async (request) => {
      const sessionToken = requireSessionToken(bearerToken(request));
      const { current_password, new_password } = request.body;
      return { user: await changePassword(deps, { sessionToken, currentPassword: current_password, newPassword: new_password }) };
    },
  );
}

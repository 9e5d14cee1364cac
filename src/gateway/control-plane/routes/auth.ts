import { Type } from 'typebox';
import { HttpProblem } from '../../../platform/errors.ts';
import { type App, bearerToken } from '../../../platform/http.ts';
import { confirmAddress, resendConfirmation } from '../address-confirmation.ts';
import type { GatewayDeps } from '../../deps.ts';
import { isSessionToken, revokeSession, tenantForSession } from '../gateway-sessions.ts';
import { requestMagicLink, verifyMagicLink } from '../magic-links.ts';
import { signup } from '../tenants.ts';

const Email = Type.String({ maxLength: 1024, description: 'Normalised: trimmed, NFC, lower-cased.' });
const SessionReply = {
  tenant_id: Type.String(),
  session_token: Type.String({ description: 'gws_…: send as "Authorization: Bearer" to /api/v1/tenant/*.' }),
  session_expires_at: Type.String({ format: 'date-time' }),
};

/**
 * Sign-up, address confirmation, sign-in by magic link and sign-out: the
 * control plane's routes that need no session (and the confirmation link's
 * resend, which checks its own).
 */
export async function controlAuthRoutes(app: App, deps: GatewayDeps): Promise<void> {
  app.post(
    '/api/v1/signup',
    {
      schema: {
        summary: 'Create a workspace: its first API key and a session (GATEWAY_SIGNUP: open, closed or token); under open, its address is confirmed by an emailed link',
        body: Type.Object({ name: Type.String({ minLength: 1, maxLength: 100 }), email: Email }),
        response: { 201: Type.Object({ ...SessionReply, api_key: Type.String({ description: 'Shown once.' }), api_key_id: Type.String() }) },
      },
    },
    async (request, reply) => {
      const result = await signup(deps, { ...request.body, ip: request.ip, adminToken: bearerToken(request) });
      return reply.status(201).header('cache-control', 'no-store').send({
        tenant_id: result.tenantId,
        api_key: result.apiKey,
        api_key_id: result.apiKeyId,
        session_token: result.sessionToken,
        session_expires_at: new Date(result.sessionExpiresAt).toISOString(),
      });
    },
  );

  app.post(
    '/api/v1/auth/magic-link/request',
    {
      schema: {
        summary: 'Email a sign-in link (the same answer whether or not the address has a workspace)',
        body: Type.Object({ email: Email }),
        response: { 202: Type.Object({ ok: Type.Boolean(), detail: Type.String() }) },
      },
    },
    async (request, reply) => {
      await requestMagicLink(deps, { email: request.body.email, ip: request.ip });
      return reply.status(202).send({ ok: true, detail: 'If a workspace belongs to this address, a sign-in link is on its way; it works once within 15 minutes.' });
    },
  );

  app.post(
    '/api/v1/auth/magic-link/verify',
    {
      schema: {
        summary: 'Exchange a sign-in link token for a session (in the confirmed workspace of the address, or a new one)',
        body: Type.Object({ token: Type.String({ maxLength: 256 }) }),
        response: {
          200: Type.Object({
            ...SessionReply,
            workspace_created: Type.Boolean({ description: 'true: the address had no confirmed workspace, and this one was created for it.' }),
          }),
        },
      },
    },
    async (request, reply) => {
      const result = await verifyMagicLink(deps, { token: request.body.token, ip: request.ip });
      return reply.header('cache-control', 'no-store').send({
        tenant_id: result.tenantId,
        session_token: result.sessionToken,
        session_expires_at: new Date(result.expiresAt).toISOString(),
        workspace_created: result.created,
      });
    },
  );

  app.post(
    '/api/v1/auth/confirm-email',
    {
      schema: {
        summary: "Confirm a workspace's address with the token of its confirmation email",
        body: Type.Object({ token: Type.String({ maxLength: 256 }) }),
        response: { 200: Type.Object({ tenant_id: Type.String(), email: Type.String(), email_confirmed_at: Type.String({ format: 'date-time' }) }) },
      },
    },
    async (request) => {
      const confirmed = await confirmAddress(deps, { token: request.body.token, ip: request.ip });
      return { tenant_id: confirmed.tenantId, email: confirmed.email, email_confirmed_at: new Date(confirmed.confirmedAt).toISOString() };
    },
  );

  app.post(
    '/api/v1/tenant/email-confirmation',
    {
      schema: {
        summary: "Email a new confirmation link to the session's workspace's address (while it is unconfirmed)",
        response: { 202: Type.Object({ email: Type.String(), expires_at: Type.String({ format: 'date-time' }) }) },
      },
    },
    async (request, reply) => {
      const tenantId = await tenantForSession(deps, bearerToken(request));
      const sent = await resendConfirmation(deps, tenantId);
      return reply.status(202).send({ email: sent.email, expires_at: new Date(sent.expiresAt).toISOString() });
    },
  );

  app.post('/api/v1/auth/logout', { schema: { summary: 'End the session (idempotent)' } }, async (request, reply) => {
    const token = bearerToken(request);
    if (!token) throw new HttpProblem(401, 'missing_session', 'Send the session token as "Authorization: Bearer gws_...".');
    // A well-formed token is 204 whether it is live, expired or already ended: a retried logout gets the same answer.
    if (!isSessionToken(token)) throw new HttpProblem(401, 'invalid_session', 'This is not a gateway session token (gws_...).');
    await revokeSession(deps, token);
    return reply.status(204).send();
  });
}

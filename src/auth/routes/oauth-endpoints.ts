import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { sha256 } from '../../platform/crypto.ts';
import { type App, apiKeyMatcher } from '../../platform/http.ts';
import { type BearerGrant, resolveBearer } from '../bearer.ts';
import { SCOPES, scopesCovered } from '../scopes.ts';
import { authenticateClient, readClientCredentials } from '../oauth/client-auth.ts';
import { isMetadataClientId } from '../oauth/client-metadata.ts';
import type { OAuthDeps } from '../oauth/clients.ts';
import { insufficientScope, invalidRequest, invalidToken, param, requireFormBody, slowDown } from '../oauth/errors.ts';
import { registerClient } from '../oauth/registration.ts';
import { tokenRequest } from '../oauth/token-request.ts';
import { findTokenOwner, revokeAccessToken, revokeFamily } from '../oauth/token-families.ts';

const NO_STORE = { 'cache-control': 'no-store', pragma: 'no-cache' };
/** RFC 6749 section 3.2 (token), RFC 7009, RFC 7662, RFC 6750 section 2.2: form bodies; named in a 415. */
const FORM_ROUTE = { accepts: 'application/x-www-form-urlencoded' };

/** RFC 8414 metadata. */
export function discoveryDocument(deps: OAuthDeps) {
  const base = deps.issuer;
  return {
    issuer: base,
    authorization_endpoint: `${base}/oauth/authorize`,
    token_endpoint: `${base}/oauth/token`,
    registration_endpoint: `${base}/oauth/register`,
    revocation_endpoint: `${base}/oauth/revoke`,
    introspection_endpoint: `${base}/oauth/introspect`,
    userinfo_endpoint: `${base}/oauth/userinfo`,
    scopes_supported: Object.keys(SCOPES),
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
    revocation_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
    introspection_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
    authorization_response_iss_parameter_supported: true,
    client_id_metadata_document_supported: true,
  };
}

/**
 * The machine-facing OAuth endpoints. `cors` (public mode) opens discovery,
 * token, registration and revocation to browser and desktop clients: any
 * origin, no credentials (they authenticate with parameters, not cookies).
 */
export async function oauthEndpoints(app: App, opts: { deps: OAuthDeps; cors: boolean; apiKeys: readonly string[] }): Promise<void> {
  const isApiKey = apiKeyMatcher(opts.apiKeys);
  const { deps } = opts;
  const corsPaths = ['/.well-known/oauth-authorization-server', '/oauth/token', '/oauth/register', '/oauth/revoke'];
  // Route-level, so every other OAuth response (userinfo, the pages) pays nothing for it.
  const corsHeaders = opts.cors
    ? {
        onSend: (_request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: null, p: unknown) => void) => {
          reply.header('access-control-allow-origin', '*');
          reply.header('access-control-expose-headers', 'www-authenticate, retry-after');
          done(null, payload);
        },
      }
    : {};
  if (opts.cors) {
    for (const path of corsPaths) {
      app.options(path, { schema: { hide: true }, ...corsHeaders }, async (_request, reply) =>
        reply
          .status(204)
          .header('access-control-allow-methods', path.startsWith('/.well-known') ? 'GET, OPTIONS' : 'POST, OPTIONS')
          .header('access-control-allow-headers', 'authorization, content-type, mcp-protocol-version')
          .header('access-control-max-age', '86400')
          .send(),
      );
    }
  }

  app.get('/.well-known/oauth-authorization-server', { schema: { hide: true }, ...corsHeaders }, async (_request, reply) =>
    reply.header('cache-control', 'public, max-age=3600').send(discoveryDocument(deps)),
  );

  app.post('/oauth/token', { schema: { hide: true }, config: FORM_ROUTE, ...corsHeaders }, async (request, reply) => {
    reply.headers(NO_STORE);
    requireFormBody(request.headers['content-type']);
    return tokenRequest(deps, readClientCredentials(request, request.body), request.body, request.ip);
  });

  app.post('/oauth/register', { schema: { hide: true }, ...corsHeaders }, async (request, reply) => {
    reply.headers(NO_STORE);
    const limit = await deps.registrationLimiter.consume(request.ip);
    if (!limit.allowed) {
      deps.metrics.rateLimited.inc({ bucket: 'oauth_register' });
      throw slowDown('Too many registrations from this address; try again later.', {
        'retry-after': String(Math.max(1, Math.ceil(limit.retryAfterMs / 1000))),
      });
    }
    return reply.status(201).send(await registerClient(deps, request.body));
  });

  app.post('/oauth/revoke', { schema: { hide: true }, config: FORM_ROUTE, ...corsHeaders }, async (request, reply) => {
    requireFormBody(request.headers['content-type']);
    const credentials = readClientCredentials(request, request.body);
    const token = param(request.body, 'token');
    if (!token) throw invalidRequest('token is required.');
    // The token is looked up first: for a metadata-URL client_id, an unknown or another client's token
    // is nothing to revoke (RFC 7009 section 2.2: 200 all the same) and is not worth a document fetch.
    const hash = sha256(token);
    const owner = await findTokenOwner(deps.db, hash);
    if (!isMetadataClientId(credentials.id) || owner?.clientId === credentials.id) {
      const client = await authenticateClient(deps, credentials, { ip: request.ip });
      if (owner?.clientId === client.id) {
        if (owner.kind === 'refresh_token') await revokeFamily(deps, deps.db, owner.familyId, 'revoked by client');
        else await revokeAccessToken(deps.db, hash, deps.clock.now());
      }
    }
    // RFC 7009 section 2.2: 200 whether or not the token was known.
    return reply.status(200).headers(NO_STORE).send();
  });

  app.post('/oauth/introspect', { schema: { hide: true }, config: FORM_ROUTE }, async (request, reply) => {
    reply.headers(NO_STORE);
    requireFormBody(request.headers['content-type']);
    if (!isApiKey(request.headers['x-api-key'])) {
      // Decided on the client_id before any lookup: no other client can make this endpoint fetch a document.
      await authenticateClient(deps, readClientCredentials(request, request.body), { requireConfidential: true });
    }
    const token = param(request.body, 'token');
    if (!token) throw invalidRequest('token is required.');
    const grant = await resolveBearer(deps, token);
    return grant ? introspection(deps, grant) : { active: false };
  });

  const userinfo = async (request: FastifyRequest, reply: FastifyReply) => {
    reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
    const m = /^Bearer +([\x21-\x7e]+) *$/i.exec(request.headers.authorization ?? '');
    const grant = m?.[1] ? await resolveBearer(deps, m[1]) : null;
    if (!grant) {
      throw invalidToken('The access token is missing, invalid or expired.', {
        'www-authenticate': 'Bearer error="invalid_token", error_description="The access token is missing, invalid or expired"',
      });
    }
    if (!scopesCovered(grant.scope.split(' '), ['identity'])) {
      throw insufficientScope('The token lacks the identity scope.', {
        'www-authenticate': 'Bearer error="insufficient_scope", scope="identity"',
      });
    }
    return { sub: grant.userId, email: grant.email, email_verified: grant.emailVerified };
  };
  const userinfoSchema = {
    hide: true,
    response: { 200: Type.Object({ sub: Type.String(), email: Type.String(), email_verified: Type.Boolean() }) },
  };
  app.get('/oauth/userinfo', { schema: userinfoSchema }, userinfo);
  app.post('/oauth/userinfo', { schema: userinfoSchema, config: FORM_ROUTE }, userinfo);
}

/**
 * RFC 7662 section 2.2 response, for access tokens and personal access tokens
 * alike. `token_type` is the OAuth token type (RFC 7662 section 2.2, RFC 6750):
 * both are Bearer tokens; `token_kind` tells them apart.
 */
function introspection(deps: OAuthDeps, grant: BearerGrant) {
  return {
    active: true,
    scope: grant.scope,
    client_id: grant.clientId ?? undefined,
    sub: grant.userId,
    username: grant.email,
    exp: Math.floor(grant.expiresAt / 1000),
    iat: Math.floor(grant.issuedAt / 1000),
    iss: deps.issuer,
    ...(grant.resource ? { aud: grant.resource } : {}),
    token_type: 'Bearer',
    token_kind: grant.kind,
  };
}

import { request } from 'undici';
import { HttpProblem } from '../../platform/errors.ts';
import type { AccountsSignIn } from '../config.ts';

/**
 * The gateway as an OAuth client of the account service (the console's
 * "Sign in with your account"): the server's metadata (RFC 8414), the code
 * exchange with client_secret_basic (RFC 6749 section 2.3.1), userinfo, the
 * refresh of the grant a console session keeps (section 6; rotated by the
 * account service, accounts-session-grants.ts), and revocation (RFC 7009).
 * Every call: undici, a 5-second bound on headers and body, at most 64 KiB
 * read, JSON only. Tokens never reach a log line or an error message: a
 * failure says which step failed and with what status.
 */
export interface AccountsMetadata {
  issuer: string;
  authorizationEndpoint: string;
  tokenEndpoint: string;
  userinfoEndpoint: string;
  revocationEndpoint: string | undefined;
  /** RFC 9207: the server puts `iss` in its authorization responses, so a response without it is refused. */
  issParameter: boolean;
}

export interface VerifiedIdentity {
  sub: string;
  email: string;
}

const TIMEOUT_MS = 5000;
const MAX_BODY_BYTES = 64 * 1024;
const METADATA_TTL_MS = 3_600_000;

/** The account service could not be used (unreachable, or an answer we cannot use): a 502 page, the cause in the log. */
export const accountsUnavailable = (step: string, cause?: unknown) =>
  new HttpProblem(502, 'accounts_unavailable', 'The account service could not be reached or gave an answer we cannot use; try again in a moment.', {
    cause: new Error(`account service: ${step}`, { cause }),
  });

export class AccountsClient {
  readonly settings: AccountsSignIn;
  #metadata: { value: AccountsMetadata; until: number } | undefined;

  constructor(settings: AccountsSignIn) {
    this.settings = settings;
  }

  /** The server's metadata, fetched from `{issuer}/.well-known/oauth-authorization-server` and kept an hour. */
  async metadata(now: number): Promise<AccountsMetadata> {
    if (this.#metadata && this.#metadata.until > now) return this.#metadata.value;
    const { issuer } = this.settings;
    const doc = await callJson('metadata', `${issuer}/.well-known/oauth-authorization-server`, { method: 'GET' });
    // RFC 8414 section 3.3: the issuer in the document must be the one we asked (no mix-up with another server).
    if (doc['issuer'] !== issuer) throw accountsUnavailable(`metadata names issuer ${JSON.stringify(doc['issuer'])}, not ${issuer}`);
    const endpoint = (name: string) => {
      const value = doc[name];
      if (typeof value !== 'string' || !URL.canParse(value)) throw accountsUnavailable(`metadata has no usable ${name}`);
      return value;
    };
    // The console's sign-in page lets its form redirect only to the issuer's origin (layout.ts consoleCsp).
    if (new URL(endpoint('authorization_endpoint')).origin !== new URL(issuer).origin) throw accountsUnavailable('authorization_endpoint is not on the issuer\'s origin');
    const challenges = doc['code_challenge_methods_supported'];
    if (!Array.isArray(challenges) || !challenges.includes('S256')) throw accountsUnavailable('metadata does not offer PKCE S256');
    const value: AccountsMetadata = {
      issuer,
      authorizationEndpoint: endpoint('authorization_endpoint'),
      tokenEndpoint: endpoint('token_endpoint'),
      userinfoEndpoint: endpoint('userinfo_endpoint'),
      revocationEndpoint: typeof doc['revocation_endpoint'] === 'string' ? doc['revocation_endpoint'] : undefined,
      issParameter: doc['authorization_response_iss_parameter_supported'] === true,
    };
    this.#metadata = { value, until: now + METADATA_TTL_MS };
    return value;
  }

  /**
   * Exchanges the code (with its PKCE verifier) for tokens and reads userinfo
   * with the access token. The grant's refresh token is handed back: the
   * caller keeps it with the console session, or revokes it. A refused code
   * (used, expired, not ours) is a 400 page; anything else unusable, a 502.
   */
  async identify(
    metadata: AccountsMetadata,
    code: string,
    verifier: string,
  ): Promise<{ sub: string; email: string; emailVerified: boolean; refreshToken: string | undefined }> {
    const { redirectUri } = this.settings;
    const form = new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: verifier }).toString();
    const tokens = await callJson('token', metadata.tokenEndpoint, {
      method: 'POST',
      headers: this.#formHeaders(),
      body: form,
      refusal: (status, body) =>
        status === 400 && body['error'] === 'invalid_grant'
          ? new HttpProblem(400, 'sign_in_code_refused', 'The account service refused this sign-in (it was already used or has expired). Start again from the sign-in page.')
          : undefined,
    });
    const accessToken = tokens['access_token'];
    if (typeof accessToken !== 'string' || String(tokens['token_type']).toLowerCase() !== 'bearer') throw accountsUnavailable('token response without a bearer access token');
    const refreshToken = typeof tokens['refresh_token'] === 'string' ? tokens['refresh_token'] : undefined;
    let info: Record<string, unknown>;
    try {
      info = await callJson('userinfo', metadata.userinfoEndpoint, { method: 'GET', headers: { authorization: `Bearer ${accessToken}` } });
    } catch (err) {
      if (refreshToken) await this.revoke(metadata, refreshToken);
      throw err;
    }
    const { sub, email } = info;
    if (typeof sub !== 'string' || typeof email !== 'string') {
      if (refreshToken) await this.revoke(metadata, refreshToken);
      throw accountsUnavailable('userinfo without sub and email');
    }
    return { sub, email, emailVerified: info['email_verified'] === true, refreshToken };
  }

  /**
   * Refreshes a grant (RFC 6749 section 6): the rotated refresh token, or
   * `refused` when the account service answers invalid_grant (the grant was
   * revoked: a password reset, the grant revoked on the account page, a
   * replayed token; or it expired). Anything else (unreachable, another
   * error) throws accountsUnavailable: that says nothing about the grant.
   */
  async refresh(metadata: AccountsMetadata, refreshToken: string): Promise<{ refreshToken: string } | 'refused'> {
    const form = new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken }).toString();
    let refused = false;
    const tokens = await callJson('refresh', metadata.tokenEndpoint, {
      method: 'POST',
      headers: this.#formHeaders(),
      body: form,
      refusal: (status, body) => {
        refused = status === 400 && body['error'] === 'invalid_grant';
        return refused ? new HttpProblem(401, 'accounts_grant_refused', 'The account service refused the grant.') : undefined;
      },
    }).catch((err: unknown) => {
      if (refused) return undefined;
      throw err;
    });
    if (!tokens) return 'refused';
    const rotated = tokens['refresh_token'];
    // RFC 6749 section 6: a server may keep the same refresh token; ours rotates it.
    return { refreshToken: typeof rotated === 'string' ? rotated : refreshToken };
  }

  /** Revokes a refresh token, and so its grant (RFC 7009); best effort: a failure is ignored (the grant expires at the account service). */
  async revoke(metadata: AccountsMetadata, refreshToken: string): Promise<void> {
    if (!metadata.revocationEndpoint) return;
    const body = new URLSearchParams({ token: refreshToken, token_type_hint: 'refresh_token' }).toString();
    await callJson('revoke', metadata.revocationEndpoint, { method: 'POST', headers: this.#formHeaders(), body, empty: true }).catch(() => undefined);
  }

  /** client_secret_basic (RFC 6749 section 2.3.1: each part form-encoded) and a form body. */
  #formHeaders(): Record<string, string> {
    const { clientId, clientSecret } = this.settings;
    const basic = `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`).toString('base64')}`;
    return { authorization: basic, 'content-type': 'application/x-www-form-urlencoded' };
  }
}

interface CallOptions {
  method: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  /** A refusal the caller turns into its own error (otherwise every non-2xx is accountsUnavailable). */
  refusal?: (status: number, body: Record<string, unknown>) => HttpProblem | undefined;
  /** The answer may have no body (revocation). */
  empty?: boolean;
}

async function callJson(step: string, url: string, options: CallOptions): Promise<Record<string, unknown>> {
  let res: Awaited<ReturnType<typeof request>>;
  try {
    res = await request(url, {
      method: options.method,
      headers: { accept: 'application/json', ...options.headers },
      body: options.body,
      headersTimeout: TIMEOUT_MS,
      bodyTimeout: TIMEOUT_MS,
      signal: AbortSignal.timeout(TIMEOUT_MS * 2),
    });
  } catch (err) {
    throw accountsUnavailable(`${step} request failed`, err);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of res.body) {
      size += (chunk as Buffer).length;
      if (size > MAX_BODY_BYTES) {
        res.body.destroy();
        throw accountsUnavailable(`${step} answer larger than ${MAX_BODY_BYTES} bytes`);
      }
      chunks.push(chunk as Buffer);
    }
  } catch (err) {
    if (err instanceof HttpProblem) throw err;
    throw accountsUnavailable(`${step} answer could not be read`, err);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  let body: Record<string, unknown> = {};
  if (text !== '' && /json/i.test(String(res.headers['content-type'] ?? ''))) {
    try {
      const parsed: unknown = JSON.parse(text);
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) body = parsed as Record<string, unknown>;
    } catch {
      // not JSON: handled below as an unusable answer
    }
  }
  if (res.statusCode < 200 || res.statusCode > 299) {
    throw options.refusal?.(res.statusCode, body) ?? accountsUnavailable(`${step} answered ${res.statusCode}${typeof body['error'] === 'string' ? ` ${body['error']}` : ''}`);
  }
  if (!options.empty && Object.keys(body).length === 0) throw accountsUnavailable(`${step} answer is not a JSON object`);
  return body;
}

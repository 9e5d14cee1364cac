import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { getCACertificates, setDefaultCACertificates } from 'node:tls';
import { auth as sdkAuth, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { API_KEY, type TestAuth } from '../helpers/auth.ts';
import { Browser, startOAuth } from '../helpers/oauth.ts';
import { CERT_FILE } from '../helpers/smtp.ts';

// The MCP TypeScript SDK's auth() against the real service as a public authorization server:
// RFC 9728 discovery via a tiny MCP server, DCR or a metadata-URL client, PKCE + resource, refresh.

const SCOPES = ['identity', 'msg:messages:read'];

/** An in-memory OAuthClientProvider: what an MCP client keeps for one server. */
class MemoryProvider implements OAuthClientProvider {
  readonly redirectUrl: string;
  readonly clientMetadataUrl: string | undefined;
  client: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier: string | undefined;
  lastState: string | undefined;
  authorizationUrl: URL | undefined;

  constructor(redirectUrl: string, clientMetadataUrl?: string) {
    [this.redirectUrl, this.clientMetadataUrl] = [redirectUrl, clientMetadataUrl];
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'SDK Test Agent',
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  state() {
    this.lastState = randomBytes(16).toString('base64url');
    return this.lastState;
  }
  clientInformation() {
    return this.client;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.client = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    if (!this.verifier) throw new Error('no code verifier saved');
    return this.verifier;
  }
  invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery') {
    if (scope === 'all' || scope === 'client') this.client = undefined;
    if (scope === 'all' || scope === 'tokens') this.saved = undefined;
    if (scope === 'all' || scope === 'verifier') this.verifier = undefined;
  }
}

async function listen(server: Server, host = '127.0.0.1'): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return (server.address() as AddressInfo).port;
}
const close = (server: Server) => new Promise<void>((resolve) => server.close(() => resolve()));
const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

describe('MCP TypeScript SDK client authorization against the account service (sqlite, public endpoints)', () => {
  let auth: TestAuth;
  let user: { email: string; password: string };
  let mcp: Server;
  let mcpUrl: string;
  let resource: string;
  const prmRequests: string[] = [];

  before(async () => {
    auth = await startOAuth('sqlite', { publicEndpoints: true });
    user = await auth.verifiedAccount();
    // The MCP server: only its RFC 9728 metadata matters here (path-suffixed and root variants).
    mcp = createServer((req: IncomingMessage, res: ServerResponse) => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      if (path !== '/.well-known/oauth-protected-resource/mcp' && path !== '/.well-known/oauth-protected-resource') {
        return res.writeHead(404).end();
      }
      prmRequests.push(path);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ resource, authorization_servers: [auth.url], scopes_supported: SCOPES, bearer_methods_supported: ['header'] }));
    });
    mcpUrl = `http://127.0.0.1:${await listen(mcp)}`;
    resource = `${mcpUrl}/mcp`;
  });
  after(async () => {
    await close(mcp);
    await auth.close();
  });

  /** The browser part: sign in and consent; returns the code after checking iss (RFC 9207) and state. */
  async function browse(provider: MemoryProvider): Promise<string> {
    const url = provider.authorizationUrl!;
    assert.equal(`${url.origin}${url.pathname}`, `${auth.url}/oauth/authorize`);
    assert.equal(url.searchParams.get('code_challenge_method'), 'S256');
    assert.ok(url.searchParams.get('code_challenge'));
    assert.equal(url.searchParams.get('resource'), resource);
    assert.equal(url.searchParams.get('scope'), SCOPES.join(' '));
    assert.equal(url.searchParams.get('redirect_uri'), provider.redirectUrl);
    const callback = await new Browser(false).authorize(url.toString(), user);
    assert.equal(`${callback.origin}${callback.pathname}`, provider.redirectUrl);
    assert.equal(callback.searchParams.get('iss'), auth.url);
    assert.equal(callback.searchParams.get('state'), provider.lastState);
    assert.equal(callback.searchParams.get('error'), null, callback.searchParams.get('error_description') ?? '');
    return callback.searchParams.get('code')!;
  }

  const refreshDirectly = (clientId: string, refreshToken: string) =>
    auth.request('POST', '/oauth/token', {
      key: false,
      headers: FORM,
      rawBody: form({ grant_type: 'refresh_token', refresh_token: refreshToken, client_id: clientId }),
    });

  describe('dynamic registration', () => {
    const provider = new MemoryProvider('http://127.0.0.1:38123/callback');

    test('auth() registers, redirects, exchanges the code; the token works at userinfo and introspection', async () => {
      assert.equal(await sdkAuth(provider, { serverUrl: `${mcpUrl}/mcp` }), 'REDIRECT');
      assert.ok(prmRequests.includes('/.well-known/oauth-protected-resource/mcp'), 'path-aware RFC 9728 discovery');
      assert.match(provider.client!.client_id, /^svc_/);
      assert.equal(provider.saved, undefined);

      const code = await browse(provider);
      assert.equal(await sdkAuth(provider, { serverUrl: `${mcpUrl}/mcp`, authorizationCode: code }), 'AUTHORIZED');
      const tokens = provider.saved!;
      assert.match(tokens.access_token, /^oat_/);
      assert.match(tokens.refresh_token!, /^ort_/);
      assert.equal(tokens.token_type.toLowerCase(), 'bearer');
      assert.equal(tokens.scope, SCOPES.join(' '));

      const info = await auth.request('GET', '/oauth/userinfo', { key: false, token: tokens.access_token });
      assert.equal(info.status, 200, info.text);
      assert.equal(info.body.email, user.email);

      const introspected = await auth.request('POST', '/oauth/introspect', {
        headers: { ...FORM, 'x-api-key': API_KEY },
        rawBody: form({ token: tokens.access_token }),
      });
      assert.equal(introspected.status, 200, introspected.text);
      assert.equal(introspected.body.active, true);
      assert.equal(introspected.body.aud, resource);
      assert.equal(introspected.body.client_id, provider.client!.client_id);
    });

    test('auth() with tokens present refreshes (rotation); the old refresh token is then refused', async () => {
      const old = provider.saved!;
      assert.ok(old.refresh_token, 'depends on the previous test');
      // SDK 1.x: auth() refreshes whenever a refresh token is stored; it does not look at expiry.
      assert.equal(await sdkAuth(provider, { serverUrl: `${mcpUrl}/mcp` }), 'AUTHORIZED');
      const fresh = provider.saved!;
      assert.match(fresh.access_token, /^oat_/);
      assert.match(fresh.refresh_token!, /^ort_/);
      assert.notEqual(fresh.access_token, old.access_token);
      assert.notEqual(fresh.refresh_token, old.refresh_token);
      assert.equal((await auth.request('GET', '/oauth/userinfo', { key: false, token: fresh.access_token })).status, 200);

      const reuse = await refreshDirectly(provider.client!.client_id, old.refresh_token!);
      assert.equal(reuse.status, 400, reuse.text);
      assert.equal(reuse.body.error, 'invalid_grant');
      // Reuse detection ends the whole family, the rotated pair included.
      assert.equal((await auth.request('GET', '/oauth/userinfo', { key: false, token: fresh.access_token })).status, 401);
      assert.equal((await refreshDirectly(provider.client!.client_id, fresh.refresh_token!)).body.error, 'invalid_grant');

      // The SDK reads our invalid_grant body as InvalidGrantError: it drops the tokens and starts over.
      const clientId = provider.client!.client_id;
      assert.equal(await sdkAuth(provider, { serverUrl: `${mcpUrl}/mcp` }), 'REDIRECT');
      assert.equal(provider.saved, undefined);
      assert.equal(provider.client!.client_id, clientId, 'the registration is kept');
    });
  });

  describe('client ID metadata document (metadata-URL client)', () => {
    let docs: Server;
    let docsHttp: Server;
    let httpsClientId: string;
    let httpClientId: string;
    const redirectUrl = 'http://127.0.0.1:38124/callback';
    const fetched: string[] = [];
    const serveDoc = (clientId: () => string) => (req: IncomingMessage, res: ServerResponse) => {
      if (req.url !== '/client.json') return res.writeHead(404).end();
      fetched.push(clientId());
      res.writeHead(200, { 'content-type': 'application/json' });
      const grant_types = ['authorization_code', 'refresh_token'];
      const doc = { client_id: clientId(), client_name: 'SDK Metadata Agent', redirect_uris: [redirectUrl], token_endpoint_auth_method: 'none' };
      res.end(JSON.stringify({ ...doc, grant_types, response_types: ['code'] }));
    };

    before(async () => {
      // The SDK accepts only an https clientMetadataUrl, so serve the document over https on
      // localhost with the test certificate (CN=localhost), trusted in this process only.
      const pem = readFileSync(CERT_FILE, 'utf8');
      setDefaultCACertificates([...getCACertificates('default'), pem]);
      const key = readFileSync(new URL('../fixtures/smtp-key.pem', import.meta.url));
      docs = createHttpsServer({ key, cert: pem }, serveDoc(() => httpsClientId));
      httpsClientId = `https://localhost:${await listen(docs, 'localhost')}/client.json`;
      docsHttp = createServer(serveDoc(() => httpClientId));
      httpClientId = `http://127.0.0.1:${await listen(docsHttp)}/client.json`;
    });
    after(async () => {
      await close(docs);
      await close(docsHttp);
    });

    test('the SDK refuses an http clientMetadataUrl before talking to the server', async () => {
      const provider = new MemoryProvider(redirectUrl, httpClientId);
      await assert.rejects(sdkAuth(provider, { serverUrl: `${mcpUrl}/mcp` }), /clientMetadataUrl must be a valid HTTPS URL/);
      assert.equal(provider.client, undefined);
      assert.ok(!fetched.includes(httpClientId));
    });

    test('auth() uses the https URL as client_id without registering, completes the code flow and refreshes', async () => {
      const provider = new MemoryProvider(redirectUrl, httpsClientId);
      assert.equal(await sdkAuth(provider, { serverUrl: `${mcpUrl}/mcp` }), 'REDIRECT');
      assert.equal(provider.client!.client_id, httpsClientId, 'no registration: the URL is the client_id');
      assert.equal(provider.authorizationUrl!.searchParams.get('client_id'), httpsClientId);

      const code = await browse(provider);
      assert.ok(fetched.includes(httpsClientId), 'the service fetched the metadata document');
      assert.equal(await sdkAuth(provider, { serverUrl: `${mcpUrl}/mcp`, authorizationCode: code }), 'AUTHORIZED');
      const tokens = provider.saved!;
      assert.match(tokens.access_token, /^oat_/);
      assert.match(tokens.refresh_token!, /^ort_/);
      const info = await auth.request('GET', '/oauth/userinfo', { key: false, token: tokens.access_token });
      assert.equal(info.body.email, user.email);

      assert.equal(await sdkAuth(provider, { serverUrl: `${mcpUrl}/mcp` }), 'AUTHORIZED');
      assert.notEqual(provider.saved!.refresh_token, tokens.refresh_token);
      assert.equal((await refreshDirectly(httpsClientId, tokens.refresh_token!)).body.error, 'invalid_grant');
    });
  });
});

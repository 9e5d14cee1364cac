import cookie from '@fastify/cookie';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { acceptFormBodies } from '../../platform/form.ts';
import { escapeHtml } from '../../platform/html.ts';
import { type App, usePageErrors } from '../../platform/http.ts';
import type { GatewayDeps } from '../deps.ts';
import { getTenant } from '../control-plane/tenants.ts';
import { ConsoleAssets } from './assets.ts';
import { type ConsoleCookies, type ConsoleSession, consoleCookies, readConsoleSession } from './console-session.ts';
import { CsrfTokens } from './csrf.ts';
import { type NavId, type PageFrame, renderPage, sendConsolePage } from './layout.ts';
import { apiKeyPages } from './pages/api-keys.ts';
import { overviewPage } from './pages/overview.ts';
import { providerKeyPages } from './pages/provider-keys.ts';
import { quickStartPage } from './pages/quick-start.ts';
import { requestPages } from './pages/requests.ts';
import { settingsPage } from './pages/settings.ts';
import { type SignInButton, type SignInRoutes, signInPages, signOutRoute } from './pages/sign-in.ts';
import { usagePages } from './pages/usage.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set on every signed-in console page (the scope redirects anyone else to /sign-in). */
    consoleSession: ConsoleSession | null;
  }
}

/**
 * Where another sign-in method plugs in (the account service's OAuth
 * sign-in, pages/account-sign-in.ts, is one; app.ts adds it when GATEWAY_ACCOUNTS_* are set): its buttons, drawn under the magic-link form with the
 * page's CSRF token, and its routes, registered beside the magic-link ones
 * (their POSTs CSRF-checked alike); they sign the browser in with
 * startConsoleSession (console-session.ts).
 */
export interface ConsoleOptions {
  signInButtons?: readonly SignInButton[];
  signInRoutes?: readonly SignInRoutes[];
}

/** What every console page module is handed. */
export interface ConsoleContext {
  deps: GatewayDeps;
  assets: ConsoleAssets;
  cookies: ConsoleCookies;
  csrf: CsrfTokens;
  /** Origins a form may be posted from besides the one the request was addressed to: GATEWAY_BASE_URL's. */
  allowedOrigins: string[];
  signInButtons: readonly SignInButton[];
  signInRoutes: readonly SignInRoutes[];
  /** The page frame of a signed-in page: the workspace in the header, the section marked, the sign-out form's token. */
  signedInFrame(request: FastifyRequest, title: string, current: NavId | undefined): Promise<PageFrame>;
  /** The signed-in session of a request in the signed-in scope. */
  session(request: FastifyRequest): ConsoleSession;
}

/**
 * The web console at `/`: server-rendered pages whose forms work without
 * JavaScript, over the same domain functions as the control-plane API,
 * always scoped to the signed-in tenant. Two scopes: the sign-in pages
 * (anyone; CSRF-bound to a pre-session cookie) and the console's pages
 * (a live console session, else a redirect to /sign-in; CSRF-bound to the
 * session). Forms only: a JSON body is refused (415), bodies are bounded by
 * the control plane's limit, and every refusal is a page.
 */
export async function registerConsole(app: App, deps: GatewayDeps, options: ConsoleOptions = {}): Promise<void> {
  const assets = new ConsoleAssets();
  const cookies = consoleCookies(deps.config.production);
  const session = (request: FastifyRequest): ConsoleSession => {
    if (!request.consoleSession) throw new Error('a signed-in console page was reached without a session');
    return request.consoleSession;
  };
  const csrf = new CsrfTokens(deps.config.encryptionKey);
  const ctx: ConsoleContext = {
    deps,
    assets,
    cookies,
    csrf,
    allowedOrigins: deps.config.baseUrl ? [new URL(deps.config.baseUrl).origin] : [],
    signInButtons: options.signInButtons ?? [],
    signInRoutes: options.signInRoutes ?? [],
    session,
    async signedInFrame(request, title, current) {
      const signedIn = session(request);
      const tenant = await getTenant(deps, signedIn.tenantId);
      return { assets, title, signedIn: { workspace: tenant.name, email: tenant.email, current, csrf: csrf.tokenFor(signedIn.binding) } };
    },
  };

  await app.register(async (scope: App) => {
    await scope.register(cookie);
    acceptFormBodies(scope);
    scope.removeContentTypeParser('application/json');
    scope.addHook('onRoute', (route) => {
      route.bodyLimit ??= deps.config.controlBodyLimit;
    });
    usePageErrors(scope, (reply, status, message) => sendErrorPage(assets, reply, status, message));
    await scope.register(assets.routes);
    await scope.register(signInPages, ctx);

    await scope.register(async (pages: App) => {
      pages.decorateRequest('consoleSession', null);
      pages.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
        const live = await readConsoleSession(deps, cookies, request);
        if (!live) {
          if (request.cookies[cookies.session] !== undefined) reply.clearCookie(cookies.session, cookies.options);
          return reply.redirect('/sign-in', 303);
        }
        request.consoleSession = live;
      });
      // After the body is parsed, before anything reads it: every POST is checked (csrf.ts).
      pages.addHook('preValidation', async (request: FastifyRequest) => {
        if (request.method === 'POST') csrf.checkPost(request, session(request).binding, ctx.allowedOrigins);
      });
      await pages.register(overviewPage, ctx);
      await pages.register(usagePages, ctx);
      await pages.register(requestPages, ctx);
      await pages.register(apiKeyPages, ctx);
      await pages.register(providerKeyPages, ctx);
      await pages.register(settingsPage, ctx);
      await pages.register(quickStartPage, ctx);
      await pages.register(signOutRoute, ctx);
    });
  });
}

const ERROR_TITLES: Record<number, string> = {
  403: 'This form was refused',
  404: 'Not found',
  429: 'Too many attempts',
};

/** A refusal as a page: its sentence announced, and a way back. */
function sendErrorPage(assets: ConsoleAssets, reply: FastifyReply, status: number, message: string): FastifyReply {
  const title = ERROR_TITLES[status] ?? (status >= 500 ? 'Something went wrong' : 'This request cannot be used');
  const body = `<h1>${escapeHtml(title)}</h1><p class="form-error" role="alert">${escapeHtml(message)}</p><p><a href="/">Back to the console</a></p>`;
  return sendConsolePage(reply, status, renderPage({ assets, title }, body));
}

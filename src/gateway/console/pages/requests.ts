import type { App } from '../../../platform/http.ts';
import type { ConsoleContext } from '../console.ts';

/** Requests: the request log and each request's page. Being built: registers nothing yet. */
export async function requestPages(_app: App, _ctx: ConsoleContext): Promise<void> {}

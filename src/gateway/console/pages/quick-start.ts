import type { App } from '../../../platform/http.ts';
import type { ConsoleContext } from '../console.ts';

/** Quick start: copy-ready snippets. Being built: registers nothing yet. */
export async function quickStartPage(_app: App, _ctx: ConsoleContext): Promise<void> {}

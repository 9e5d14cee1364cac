import type { App } from '../../../platform/http.ts';
import type { ConsoleContext } from '../console.ts';

/** Settings: the workspace's pipeline settings. Being built: registers nothing yet. */
export async function settingsPage(_app: App, _ctx: ConsoleContext): Promise<void> {}

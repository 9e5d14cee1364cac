import type { App } from '../../../platform/http.ts';
import type { ConsoleContext } from '../console.ts';

/** Usage: totals, charts and tables grouped by tag, session, model and key; CSV export. Being built: registers nothing yet. */
export async function usagePages(_app: App, _ctx: ConsoleContext): Promise<void> {}

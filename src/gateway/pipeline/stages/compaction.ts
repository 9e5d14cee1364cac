import type { Stage } from '../call.ts';

/** Prompt compaction (issue 8): X-Gateway-Compact or the tenant's default. Not built yet: passes the call on. */
export function compactionStage(): Stage {
  return function compactPrompt(_call, next) {
    return next();
  };
}

import type { Stage } from '../call.ts';

/** In-flight dedup (issue 8). Not built yet: passes the call on. */
export function dedupStage(): Stage {
  return function joinInFlight(_call, next) {
    return next();
  };
}

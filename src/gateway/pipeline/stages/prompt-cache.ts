import type { Stage } from '../call.ts';

/** Provider prompt caching (issue 8): cache_control breakpoints, prompt_cache_key. Not built yet: passes the call on. */
export function promptCacheStage(): Stage {
  return function placePromptCache(_call, next) {
    return next();
  };
}

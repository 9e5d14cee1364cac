import type { Stage } from '../call.ts';

/** Budgets and limits (issue 8): reserves the call's estimated cost before the upstream call, settles the real one after. Not built yet: passes the call on. */
export function budgetStage(): Stage {
  return function enforceBudgets(_call, next) {
    return next();
  };
}

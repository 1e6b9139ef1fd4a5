/**
 * The `overrides` service a request's rate-limit actions get: which account owns a bucket scope, that account's
 * overrides from the isolate's copy (override-cache.ts), and the match (override-match.ts). worker.ts makes one
 * per isolate, handing in how to read an account's overrides and whose a scope is, so the gateway needs neither.
 */

import type { OverrideCache } from "./override-cache.ts";
import type { LimitOverride, LimitOverrides } from "./override-match.ts";

export interface OverrideSource<E> {
  /** The live overrides of `accountId` (one store call). */
  read(env: E, accountId: string): Promise<readonly LimitOverride[]>;
  /** The account whose overrides apply to bucket scope `scope` (`route:…`, `tunnel:…`), or undefined for none. */
  accountOf(env: E, scope: string): string | undefined;
}

/** The service for `env`, made once per env object (a Worker's env is the same object across its requests). */
export function overrideServices<E extends object>(cache: OverrideCache, source: OverrideSource<E>, now: () => number = Date.now): (env: E) => LimitOverrides {
  const made = new WeakMap<E, LimitOverrides>();
  return (env) => {
    let service = made.get(env);
    if (service) return service;
    const read = (accountId: string) => source.read(env, accountId);
    service = {
      find(scope, action, key, background) {
        const accountId = source.accountOf(env, scope);
        if (accountId === undefined) return undefined;
        const index = cache.indexOf(accountId, read, background);
        if (!(index instanceof Promise)) return index.size === 0 ? undefined : index.match(scope, action, key, now());
        return index.then((fresh) => fresh.match(scope, action, key, now()));
      },
    };
    made.set(env, service);
    return service;
  };
}

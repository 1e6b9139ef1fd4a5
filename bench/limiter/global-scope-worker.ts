/**
 * Bench-only Worker entry (bench/limiter/global-scope.ts): Tollgate as it is, except that its RATE_LIMITER binding delays
 * the calls of global buckets' objects by BENCH_GLOBAL_DELAY_MS each way, as if those objects were far away. Only
 * the binding is wrapped; no production module knows of it.
 */

import tollgate from "../../src/worker.ts";
import type { Env } from "../../src/env.ts";

export * from "../../src/worker.ts";

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A global bucket's objects are named with ingress `null` (src/limiter/bucket-shards.ts). */
const isGlobalShard = (name: string) => name.startsWith("[null,");

type Namespace = Env["RATE_LIMITER"];

/** A method of a native object, called on it (workerd refuses native methods called on another `this`). */
function boundTo(target: object, property: string | symbol): unknown {
  const value = Reflect.get(target, property);
  return typeof value === "function" ? value.bind(target) : value;
}

/** The stub, with every RPC call delayed `delayMs` before it goes and after it answers. */
function delayedStub<T extends object>(stub: T, delayMs: number): T {
  return new Proxy(stub, {
    get(target, property) {
      const method = Reflect.get(target, property);
      if (typeof method !== "function" || property === "fetch") return method;
      return async (...args: unknown[]) => {
        await sleep(delayMs);
        // Reflect.apply: an RPC method's own `.apply` would be a remote property of that name.
        const answer = await Reflect.apply(method, target, args);
        await sleep(delayMs);
        return answer;
      };
    },
  });
}

/** The namespace, with the stubs of global shards delayed; everything else passes through unchanged. */
function delayedNamespace(inner: Namespace, delayMs: number): Namespace {
  // Ids of global shards: a few per action (4 shards each), so the set stays small.
  const far = new Set<string>();
  return new Proxy(inner, {
    get(target, property) {
      if (property === "idFromName") {
        return (name: string) => {
          const id = target.idFromName(name);
          if (isGlobalShard(name)) far.add(id.toString());
          return id;
        };
      }
      if (property === "get") {
        return (id: DurableObjectId, options?: DurableObjectNamespaceGetDurableObjectOptions) => {
          const stub = target.get(id, options);
          return far.has(id.toString()) ? delayedStub(stub, delayMs) : stub;
        };
      }
      return boundTo(target, property);
    },
  });
}

/** One wrapped env per env the runtime hands in, so the gateway's per-env memories keep working. */
const wrapped = new WeakMap<Env, Env>();

function withDelay(env: Env): Env {
  let result = wrapped.get(env);
  if (!result) {
    const delayMs = Number((env as Env & { BENCH_GLOBAL_DELAY_MS?: string }).BENCH_GLOBAL_DELAY_MS ?? "0");
    result = delayMs > 0 ? { ...env, RATE_LIMITER: delayedNamespace(env.RATE_LIMITER, delayMs) } : env;
    wrapped.set(env, result);
  }
  return result;
}

export default {
  fetch(request, env, ctx) {
    return tollgate.fetch(request, withDelay(env), ctx);
  },
} satisfies ExportedHandler<Env>;

/** What the tunnels need from the rest of the Worker, handed in by worker.ts (tunnels import no other layer). */

import type { Env } from "../env.ts";
import type { ServiceError } from "../errors.ts";
import type { AfterResponse } from "../policy/exchange.ts";
import type { PolicyTarget } from "../policy/target.ts";
import type { HostCache } from "./host-cache.ts";
import type { CompiledPolicyCache } from "./policy-cache.ts";

/** `credentialId`: the public id of the key (`cr_…`), named by the session's registry record. */
export type AgentAuthentication = { ok: true; accountId: string; credentialId: string } | { ok: false; error: ServiceError };

export interface TunnelServices {
  /** This isolate's memory of tunnel hosts. */
  readonly hosts: HostCache;
  /** This isolate's compiled tunnel traffic policies. */
  readonly policies: CompiledPolicyCache;
  /**
   * Runs a request through a target's traffic policy: inbound, the target, outbound (the gateway's pipeline);
   * `afterResponse`: the request's ExecutionContext.
   */
  runPolicy(request: Request, env: Env, target: PolicyTarget, afterResponse?: AfterResponse): Promise<Response>;
  /** Checks the API key an agent presents (the management API's keys). */
  authenticate(authorization: string | null, env: Env): Promise<AgentAuthentication>;
}

/** What a traffic policy stands in front of: a route's upstream, a tunnel, the agent endpoint. */

import type { CompiledPolicy } from "./compile.ts";
import type { Exchange } from "./exchange.ts";

export interface PolicyTarget {
  /** Namespace of the target's rate-limit buckets. */
  readonly scope: string;
  readonly policy: CompiledPolicy;
  /** Sends the request (after the inbound policy) to the target and returns its answer. */
  forward(request: Request, exchange: Exchange): Promise<Response>;
}

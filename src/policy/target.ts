/** What a traffic policy stands in front of: a route's upstream, a tunnel, the agent endpoint. */

import type { ServiceError } from "../errors.ts";
import type { CompiledPolicy } from "./compile.ts";
import type { Exchange, ExchangeRequest } from "./exchange.ts";

export interface PolicyTarget {
  /** Namespace of the target's rate-limit buckets; also names the target on a forward-internal chain. */
  readonly scope: string;
  readonly policy: CompiledPolicy;
  /** Sends the request (after the inbound policy) to the target and returns its answer. */
  forward(request: Request, exchange: Exchange): Promise<Response>;
  /** The targets this one's `forward-internal` actions may reach (its owner's); absent: none. */
  readonly internal?: InternalTargets;
  /** Told when the inbound policy answered the request itself (the target was not called), with that answer. */
  answeredItself?(response: Response, exchange: Exchange): void;
}

/** Finds a target of one owner by internal URL (`https://api.internal`), for forward-internal. */
export interface InternalTargets {
  /**
   * The target `url` names for this request (a route also matches by the request's path), the error its
   * traffic gets (its policy does not load), or undefined when the owner has nothing there.
   */
  resolve(url: URL, request: ExchangeRequest): Promise<PolicyTarget | ServiceError | undefined>;
}

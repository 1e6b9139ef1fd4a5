/**
 * The targets one request has been forwarded through by `forward-internal`, and where that stops: a target
 * already on the chain is a loop, and a chain may hold at most MAX_FORWARD_HOPS forwards. The chain also
 * carries what must not change along it: the client's address (a policy may rewrite the header it came from)
 * and the request's evaluation budget (a forward runs another policy, not another request's worth of work).
 */

import { ServiceError } from "../errors.ts";
import type { EvaluationBudget } from "./evaluation-budget.ts";

/** Forwards one request may make, in a row: each runs one more traffic policy (and, to a tunnel, one object call). */
export const MAX_FORWARD_HOPS = 4;

/** Stable numbers; where ngrok has a number for the same case, it is used. */
export const ForwardErrorCode = {
  /** Nothing of the owner is served at the internal URL (ngrok ERR_NGROK_3200: the endpoint is offline). */
  notFound: 3200,
  /** The chain is MAX_FORWARD_HOPS long (ngrok ERR_NGROK_3501: may only forward through MAX endpoints). */
  tooManyHops: 3501,
  /** The target is already on the chain (ngrok ERR_NGROK_3603: a loop was detected). */
  loop: 3603,
} as const;

const FORWARD_ADVICE = {
  title: "This address forwards to an internal target that cannot take the request",
  steps: [
    "The gateway is up, but the service behind this address passes requests on to another of its services, which did not take this one. Try again later.",
    "If you run this address: check the url of its forward-internal action and that the target it names is online; the message says what went wrong.",
  ],
};

export class ForwardChain {
  private constructor(
    /** Scopes of the targets the request has run through, the one it arrived at first. */
    readonly scopes: readonly string[],
    readonly clientIp: string,
    readonly budget: EvaluationBudget,
  ) {}

  /** The chain of a request that arrived at `scope` and has not been forwarded yet. */
  static startingAt(scope: string, clientIp: string, budget: EvaluationBudget): ForwardChain {
    return new ForwardChain([scope], clientIp, budget);
  }

  get hops(): number {
    return this.scopes.length - 1;
  }

  /** The error when no further forward is allowed; checked before a target is looked up (that may cost an object call). */
  full(url: URL): ServiceError | undefined {
    if (this.hops < MAX_FORWARD_HOPS) return undefined;
    return new ServiceError(
      508,
      ForwardErrorCode.tooManyHops,
      `forward-internal to ${url.origin} refused: this request was already forwarded ${this.hops} times, the most a request may be (${MAX_FORWARD_HOPS}).`,
      { details: { url: url.origin, hops: this.hops }, advice: FORWARD_ADVICE },
    );
  }

  /** The chain with `scope` added, or the loop error when the request has already run through it. */
  to(scope: string, url: URL): ForwardChain | ServiceError {
    if (this.scopes.includes(scope)) {
      return new ServiceError(
        508,
        ForwardErrorCode.loop,
        `forward-internal to ${url.origin} refused: a loop was detected, this request already ran through that target.`,
        { details: { url: url.origin, hops: this.hops }, advice: FORWARD_ADVICE },
      );
    }
    return new ForwardChain([...this.scopes, scope], this.clientIp, this.budget);
  }
}

/** ERR_SVC_3200: nothing the forwarding target's owner may reach is served at the internal URL. */
export function internalTargetNotFound(url: URL): ServiceError {
  return new ServiceError(
    404,
    ForwardErrorCode.notFound,
    `forward-internal found no target at ${url.origin}: nothing of this owner is served there, or it is offline.`,
    { details: { url: url.origin }, advice: FORWARD_ADVICE },
  );
}

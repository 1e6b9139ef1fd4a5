/**
 * What a tunnel's inbound policy decided about one request, for its agent: the rate limits it was counted
 * against, and the action that answered it when the edge answered itself. The tunnel's compiled policy is
 * wrapped once (policy-cache.ts); each wrapped action notes into the request's trail, kept by its exchange.
 */

import type { CompiledAction } from "../policy/actions/index.ts";
import type { CompiledEntry, CompiledPolicy } from "../policy/compile.ts";
import type { ActionServices, DecisionSink, Exchange, RateLimitEvent } from "../policy/exchange.ts";
import {
  type AnsweredBy,
  type CarriedRateLimit,
  cut,
  EDGE_DECISIONS_PER_SECOND,
  MAX_CARRIED_BUCKET_KEY,
  MAX_CARRIED_RATE_LIMITS,
} from "../relay/edge-decision.ts";
import { DecisionSampler } from "./decision-sampler.ts";

export interface DecisionTrail {
  readonly rateLimits: CarriedRateLimit[];
  answeredBy?: AnsweredBy;
}

/** This isolate's trails of requests in flight (weakly, by exchange) and its sampler of edge decisions per tunnel. */
export class DecisionTrails {
  private readonly trails = new WeakMap<Exchange, DecisionTrail>();
  readonly sampler: DecisionSampler;

  constructor(now: () => number = Date.now) {
    this.sampler = new DecisionSampler(EDGE_DECISIONS_PER_SECOND, now);
  }

  of(exchange: Exchange): DecisionTrail | undefined {
    return this.trails.get(exchange);
  }

  /** `policy` with its inbound actions noting into the request's trail (outbound decisions come after the request was relayed). */
  wrap(policy: CompiledPolicy): CompiledPolicy {
    if (policy.inbound.length === 0) return policy;
    const inbound: CompiledEntry[] = policy.inbound.map((entry, entryIndex) => ({
      ...(entry.name !== undefined ? { name: entry.name } : {}),
      expressions: entry.expressions,
      actions: entry.actions.map((action, actionIndex) =>
        this.noting(action, {
          phase: "inbound",
          entry: entryIndex,
          action: actionIndex,
          type: action.type,
          ...(entry.name ? { entry_name: cut(entry.name, 255) } : {}),
        }),
      ),
    }));
    return { inbound, outbound: policy.outbound };
  }

  private trail(exchange: Exchange): DecisionTrail {
    let trail = this.trails.get(exchange);
    if (trail === undefined) {
      trail = { rateLimits: [] };
      this.trails.set(exchange, trail);
    }
    return trail;
  }

  /** `action` as it was (its type, and a rate limit's `limits` for reading buckets back), its run noting too. */
  private noting(action: CompiledAction, at: AnsweredBy): CompiledAction {
    const trails = this;
    if (!action.reportsRateLimits) {
      return {
        ...action,
        async run(exchange, services) {
          const answer = await action.run(exchange, services);
          if (answer) trails.trail(exchange).answeredBy = at;
          return answer;
        },
      };
    }
    return {
      ...action,
      async run(exchange, services) {
        let event: RateLimitEvent | undefined;
        const tee: DecisionSink = {
          rateLimit(seen) {
            event = seen;
            services.decisions?.rateLimit(seen);
          },
          log: (record) => services.decisions?.log(record),
        };
        const answer = await action.run(exchange, { ...services, decisions: tee } satisfies ActionServices);
        const trail = trails.trail(exchange);
        if (event && trail.rateLimits.length < MAX_CARRIED_RATE_LIMITS) trail.rateLimits.push(carried(event, exchange));
        if (answer) trail.answeredBy = at;
        return answer;
      },
    };
  }
}

function carried(event: RateLimitEvent, exchange: Exchange): CarriedRateLimit {
  const vars = exchange.vars.rate_limit;
  return {
    name: cut(event.action, 127),
    bucket_key: cut(event.bucketKey, MAX_CARRIED_BUCKET_KEY),
    limited: vars.limited,
    outcome: event.outcome,
    retry_after: event.retryAfter,
    remaining: Math.max(0, Math.floor(event.remaining)),
    capacity: Math.max(0, Math.floor(event.capacity)),
    window_s: event.windowMs / 1000,
    ...(vars.error.code ? { error_code: cut(vars.error.code, 63) } : {}),
  };
}

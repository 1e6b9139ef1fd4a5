/**
 * The compiled traffic policies of tunnels, kept by one isolate: compiling on every request would cost
 * what the cost bounds allow a load to cost, every time. Bounded by an estimate of the bytes the compiled
 * policies hold, least recently used first out.
 */

import { ErrorCode, ServiceError } from "../errors.ts";
import { compilePolicy, emptyPolicy, type CompiledPolicy } from "../policy/compile.ts";
import { DecisionTrails } from "./decision-trails.ts";
import { formatIssue } from "../policy/issues.ts";

/** What the cache may hold, estimated (an isolate has 128 MB). */
export const MAX_CACHED_POLICY_BYTES = 16 * 1024 * 1024;
/**
 * Heap bytes of a compiled policy per byte of its JSON document: above what was measured for entries of short
 * expressions, long CIDR lists and custom-response bodies (figures: docs/benchmark.md#figures-behind-constants-in-the-code).
 */
export const COMPILED_BYTES_PER_SOURCE_BYTE = 64;
/**
 * Heap bytes of one compiled matches() pattern at most: a 500-instruction program and its 64 cached DFA
 * states, scaled up from a fresh 60-instruction pattern's measured heap (docs/benchmark.md#figures-behind-constants-in-the-code).
 */
export const BYTES_PER_PATTERN = 256 * 1024;
/** What any entry costs (key, map slot, an empty policy), so a flood of tunnels without a policy is bounded too. */
export const ENTRY_OVERHEAD_BYTES = 256;

type Cached = { readonly policy: CompiledPolicy | ServiceError; readonly bytes: number };

export class CompiledPolicyCache {
  private readonly entries = new Map<string, Cached>();
  private total = 0;

  /** What the cached policies' inbound actions decided per request in flight, for the tunnels' agents. */
  readonly trails: DecisionTrails;

  constructor(
    private readonly maxBytes: number = MAX_CACHED_POLICY_BYTES,
    now: () => number = Date.now,
  ) {
    this.trails = new DecisionTrails(now);
  }

  /** Estimated bytes held now. */
  get bytes(): number {
    return this.total;
  }

  get size(): number {
    return this.entries.size;
  }

  /** The tunnel's compiled policy (compiled on first use), or the error to answer its traffic with. */
  get(tunnelId: string, document: unknown): CompiledPolicy | ServiceError {
    const hit = this.entries.get(tunnelId);
    if (hit) {
      this.entries.delete(tunnelId);
      this.entries.set(tunnelId, hit);
      return hit.policy;
    }
    const compiled = compileForCache(document);
    const cached = compiled.policy instanceof ServiceError ? compiled : { ...compiled, policy: this.trails.wrap(compiled.policy) };
    this.entries.set(tunnelId, cached);
    this.total += cached.bytes;
    for (const [key, entry] of this.entries) {
      if (this.total <= this.maxBytes || key === tunnelId) break;
      this.entries.delete(key);
      this.total -= entry.bytes;
    }
    return cached.policy;
  }
}

function compileForCache(document: unknown): Cached {
  if (document === undefined || document === null) return { policy: emptyPolicy, bytes: ENTRY_OVERHEAD_BYTES };
  const compiled = compilePolicy(document, { prefix: ["traffic_policy"] });
  if (!compiled.ok) {
    const message = `The tunnel's traffic policy does not compile: ${compiled.issues.map(formatIssue).join("; ")}`;
    return { policy: new ServiceError(500, ErrorCode.internal, message), bytes: ENTRY_OVERHEAD_BYTES + 2 * message.length };
  }
  const patterns = [...compiled.policy.inbound, ...compiled.policy.outbound].reduce(
    (sum, entry) => sum + entry.expressions.reduce((count, expression) => count + expression.patterns, 0),
    0,
  );
  return {
    policy: compiled.policy,
    bytes: ENTRY_OVERHEAD_BYTES + compiled.bytes * COMPILED_BYTES_PER_SOURCE_BYTE + patterns * BYTES_PER_PATTERN,
  };
}

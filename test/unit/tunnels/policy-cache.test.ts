/** The isolate's cache of compiled tunnel policies: compiled once, bounded by an estimate of bytes. */

import { describe, expect, it } from "vitest";
import { ServiceError } from "../../../src/errors.ts";
import { emptyPolicy } from "../../../src/policy/compile.ts";
import {
  BYTES_PER_PATTERN,
  COMPILED_BYTES_PER_SOURCE_BYTE,
  CompiledPolicyCache,
  ENTRY_OVERHEAD_BYTES,
  MAX_CACHED_POLICY_BYTES,
} from "../../../src/tunnels/policy-cache.ts";

const denyAll = { inbound: [{ expressions: ["req.method == 'GET'"], actions: [{ type: "deny" }] }] };
/** The JSON size compilePolicy measures for denyAll. */
const DENY_ALL_BYTES = JSON.stringify(denyAll).length;
const DENY_ALL_COST = ENTRY_OVERHEAD_BYTES + DENY_ALL_BYTES * COMPILED_BYTES_PER_SOURCE_BYTE;

describe("compiled tunnel policies", () => {
  it("a tunnel's policy is compiled once and then served from the cache", () => {
    const cache = new CompiledPolicyCache();
    const first = cache.get("tn_a", denyAll);
    expect(first).not.toBeInstanceOf(ServiceError);
    expect(cache.get("tn_a", denyAll)).toBe(first);
    expect(cache.bytes).toBe(DENY_ALL_COST);
  });

  it("a tunnel without a policy gets the empty policy and costs the entry overhead", () => {
    const cache = new CompiledPolicyCache();
    expect(cache.get("tn_a", undefined)).toBe(emptyPolicy);
    expect(cache.bytes).toBe(ENTRY_OVERHEAD_BYTES);
  });

  it("a matches() pattern is counted at its worst-case size", () => {
    const cache = new CompiledPolicyCache();
    const policy = { inbound: [{ expressions: ["req.url.path.matches('^/a')"], actions: [{ type: "deny" }] }] };
    cache.get("tn_a", policy);
    expect(cache.bytes).toBe(ENTRY_OVERHEAD_BYTES + JSON.stringify(policy).length * COMPILED_BYTES_PER_SOURCE_BYTE + BYTES_PER_PATTERN);
  });

  it("a policy that does not compile answers 500 with the issues, and is cached as such", () => {
    const cache = new CompiledPolicyCache();
    const answer = cache.get("tn_a", { inbound: [{ actions: [] }] });
    expect(answer).toBeInstanceOf(ServiceError);
    expect((answer as ServiceError).status).toBe(500);
    expect((answer as ServiceError).message).toBe(
      "The tunnel's traffic policy does not compile: traffic_policy.inbound[0].actions: must have at least 1 action",
    );
    expect(cache.get("tn_a", denyAll)).toBe(answer);
  });

  it("past its bytes, the least recently used policies are forgotten first", () => {
    const cache = new CompiledPolicyCache(3 * DENY_ALL_COST);
    const a = cache.get("tn_a", denyAll);
    cache.get("tn_b", denyAll);
    cache.get("tn_c", denyAll);
    expect(cache.get("tn_a", denyAll)).toBe(a); // a is now the most recently used
    cache.get("tn_d", denyAll); // b goes
    expect(cache.size).toBe(3);
    expect(cache.bytes).toBe(3 * DENY_ALL_COST);
    expect(cache.get("tn_a", denyAll)).toBe(a);
    const b = cache.get("tn_b", denyAll); // compiled again: a new object
    expect(b).not.toBe(a);
    expect(cache.bytes).toBeLessThanOrEqual(3 * DENY_ALL_COST);
  });

  it("a flood of tunnels without a policy stays within the bytes", () => {
    const cache = new CompiledPolicyCache(100 * ENTRY_OVERHEAD_BYTES);
    for (let i = 0; i < 1000; i++) cache.get(`tn_${i}`, undefined);
    expect(cache.size).toBe(100);
    expect(cache.bytes).toBe(100 * ENTRY_OVERHEAD_BYTES);
  });

  it("holds at most 16 MiB by default: 16 of the largest tenant policies", () => {
    const largest = { inbound: [{ actions: [{ type: "custom-response", config: { body: "x".repeat(16_000) } }] }] };
    const cache = new CompiledPolicyCache();
    for (let i = 0; i < 30; i++) cache.get(`tn_${i}`, largest);
    expect(MAX_CACHED_POLICY_BYTES).toBe(16 * 1024 * 1024);
    expect(cache.size).toBe(16);
    expect(cache.bytes).toBeLessThanOrEqual(MAX_CACHED_POLICY_BYTES);
  });
});

import { describe, expect, it } from "vitest";
import { limitsOf } from "../../../src/policy/actions/rate-limit-plan.ts";
import { compilePolicy } from "../../../src/policy/compile.ts";
import { DecisionTrails } from "../../../src/tunnels/decision-trails.ts";

describe("DecisionTrails.wrap", () => {
  it("keeps each action as it was: a wrapped rate limit still tells its limits", () => {
    const compiled = compilePolicy({
      inbound: [
        { actions: [{ type: "rate-limit", config: { name: "per-client", capacity: 3, rate: "60s", bucket_key: ["conn.client_ip"] } }, { type: "deny" }] },
      ],
    });
    if (!compiled.ok) throw new Error("the test policy does not load");
    const wrapped = new DecisionTrails().wrap(compiled.policy);
    const [limit, deny] = wrapped.inbound[0]!.actions;
    expect(limitsOf(limit!)).toEqual(limitsOf(compiled.policy.inbound[0]!.actions[0]!));
    expect(limitsOf(limit!)?.name).toBe("per-client");
    expect(deny!.type).toBe("deny");
    expect(limit!.run).not.toBe(compiled.policy.inbound[0]!.actions[0]!.run);
  });
});

/**
 * Adding an action is one file and its registration: a throw-away action, registered in a registry of the
 * test's own, sets a result variable that a later entry's expression reads, type-checked at load.
 */

import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineAction } from "../../../../src/policy/actions/action.ts";
import { type ActionDefinition, ActionRegistry, actionRegistry } from "../../../../src/policy/actions/index.ts";
import { declareResults } from "../../../../src/policy/actions/results.ts";
import { compileExpression } from "../../../../src/policy/cel.ts";
import { INT, STRING } from "../../../../src/policy/cel-types.ts";
import { compilePolicy } from "../../../../src/policy/compile.ts";
import { runPhase } from "../../../../src/policy/evaluate.ts";
import type { Exchange } from "../../../../src/policy/exchange.ts";
import { formatIssue } from "../../../../src/policy/issues.ts";
import { makeExchange } from "../../support/exchange.ts";
import { MemoryCounter } from "../../support/memory-counter.ts";

interface VisitVars {
  visits: bigint;
  last: { method: string };
}

/** The whole of the throw-away action: its config, its result variables and what it does. */
const countVisitsAction = defineAction({
  type: "count-visits",
  config: z.strictObject({ announce: z.boolean().default(false) }),
  configOptional: true,
  results: declareResults<VisitVars>("visit_counter", { visits: INT, last: { method: STRING } }, () => ({ visits: 0n, last: { method: "" } })),
  perPolicy: { max: 1, counts: (config) => config.announce, path: ["announce"], message: "announces at most once per policy" },
  compile() {
    return {
      type: "count-visits",
      run(exchange) {
        const vars = (exchange.vars as unknown as { visit_counter: VisitVars }).visit_counter;
        vars.visits += 1n;
        vars.last.method = exchange.request.method;
        return undefined;
      },
    };
  },
});

const registry = new ActionRegistry([...actionRegistry.definitions.values(), countVisitsAction as unknown as ActionDefinition]);

function policyOf(expression: string) {
  return {
    inbound: [
      { actions: [{ type: "count-visits" }] },
      { expressions: [expression], actions: [{ type: "custom-response", config: { status_code: 299, body: "counted" } }] },
    ],
  };
}

function problems(document: unknown, actions = registry): string[] {
  const compiled = compilePolicy(document, { actions });
  return compiled.ok ? [] : compiled.issues.map(formatIssue);
}

describe("an action registered in a registry of its own", () => {
  it("sets its variables for later expressions, under actions.svc and actions.ngrok", async () => {
    const compiled = compilePolicy(policyOf("actions.svc.visit_counter.visits == 1 && actions.ngrok.visit_counter.last.method == 'POST'"), {
      actions: registry,
    });
    if (!compiled.ok) throw new Error(compiled.issues.map(formatIssue).join("\n"));
    const exchange: Exchange = { ...makeExchange({ method: "POST" }), vars: registry.initialVars() };
    const answer = await runPhase(compiled.policy.inbound, exchange, { counter: new MemoryCounter(0) });
    expect(answer?.status).toBe(299);
    expect(await answer?.text()).toBe("counted");
  });

  it("has its variables type-checked at load, fields and types alike", () => {
    expect(problems(policyOf("actions.svc.visit_counter.visits == 'one'"))).toEqual([
      "inbound[1].expressions[0]: invalid CEL: '==' compares int with string: never equal",
    ]);
    expect(problems(policyOf("actions.svc.visit_counter.last.path == '/'"))).toEqual([
      "inbound[1].expressions[0]: invalid CEL: unknown field 'path' of actions.svc.visit_counter.last",
    ]);
  });

  it("is unknown to the gateway's registry, which does not register it", () => {
    expect(compileExpression("actions.svc.visit_counter.visits > 0", "inbound")).toEqual({
      ok: false,
      message: "invalid CEL: unknown field 'visit_counter' of actions.svc",
    });
    expect(compileExpression("actions.svc.visit_counter.visits > 0", "inbound", { actions: registry }).ok).toBe(true);
    expect(problems(policyOf("actions.svc.visit_counter.visits > 0"), actionRegistry)).toEqual([
      expect.stringMatching(/^inbound\[0\]\.actions\[0\]\.type: unknown action type "count-visits"/),
      "inbound[1].expressions[0]: invalid CEL: unknown field 'visit_counter' of actions.svc",
    ]);
  });

  it("has its per-policy bound enforced by the compiler, at the first action over it", () => {
    const announcing = { type: "count-visits", config: { announce: true } };
    expect(problems({ inbound: [{ actions: [announcing] }], outbound: [{ actions: [announcing] }] })).toEqual([
      "outbound[0].actions[0].config.announce: announces at most once per policy",
    ]);
  });
});

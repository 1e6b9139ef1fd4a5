/** A document the schema refuses still has its other expressions compiled, so one check reports everything. */

import { describe, expect, it } from "vitest";
import { compilePolicy, loadPolicy } from "../../../src/policy/compile.ts";
import { formatIssue } from "../../../src/policy/issues.ts";
import { MAX_POLICY_EXPRESSION_CHARS } from "../../../src/policy/limits.ts";
import { lines } from "../support/policy-text.ts";

const problems = (text: string) => {
  const result = loadPolicy(text, "policies/p.yaml");
  return result.ok ? [] : result.issues.map(formatIssue);
};

describe("a policy with schema problems", () => {
  it("reports the CEL problems of its other entries too, by line", () => {
    expect(
      problems(
        lines(
          "on_http_request:",
          '  - expressions: ["req.hedaers == 1"]',
          "    actions: [{ type: deny, config: { status_code: 99 } }]",
          "on_http_response:",
          '  - expressions: ["res.status_code == 200", "req.method = 1"]',
          "    actions: [{ type: deny }]",
        ),
      ),
    ).toEqual([
      "policies/p.yaml:2: on_http_request[0].expressions[0]: invalid CEL: unknown field 'hedaers' of req",
      "policies/p.yaml:3: on_http_request[0].actions[0].config.status_code: must be at least 400",
      "policies/p.yaml:5: on_http_response[0].expressions[1]: invalid CEL: 1:12: found = but expecting end of input",
    ]);
  });

  it("leaves alone the expressions of an entry whose expressions the schema refused (only the schema speaks)", () => {
    expect(problems(lines("inbound:", '  - expressions: ["req.nope", 7]', "    actions: [{ type: deny }]"))).toEqual([
      "policies/p.yaml:2: inbound[0].expressions[1]: must be a string, got number 7",
    ]);
  });

  it("ignores entries that are not maps and phases that are not lists", () => {
    expect(problems(lines("inbound: [7]", "outbound: nope"))).toEqual([
      "policies/p.yaml:1: inbound[0]: must be a map, got number 7",
      'policies/p.yaml:2: outbound: must be a list of entries, got string "nope"',
    ]);
  });

  it(`compiles none of them when together they pass ${MAX_POLICY_EXPRESSION_CHARS} characters, as a valid document would`, () => {
    // A hostile operator file: 2 MiB allowed, so without the bound its expressions could take seconds to parse.
    const expression = `req.method == '${"x".repeat(1000)}'`;
    const entries = Array.from({ length: 64 }, () => ({ expressions: Array.from({ length: 16 }, () => expression), actions: [{ type: "deny" }] }));
    const result = compilePolicy({ inbound: entries, outbound: "not a list" }, { origin: "operator" });
    expect(result.ok).toBe(false);
    const messages = result.ok ? [] : result.issues.map(formatIssue);
    expect(messages).toEqual([
      'outbound: must be a list of entries, got string "not a list"',
      `expressions together exceed the limit of ${MAX_POLICY_EXPRESSION_CHARS} characters per policy (have ${64 * 16 * expression.length})`,
    ]);
  });
});

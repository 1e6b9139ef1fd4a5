import { describe, expect, it } from "vitest";
import { compileExpression, compileValueExpression } from "../../../../src/policy/cel.ts";
import { isJsonContentType, jsonBodyValue, MAX_SETTLE_BODY_DEPTH } from "../../../../src/policy/variables/response-body.ts";

describe("res.body, for settle_cost only", () => {
  it("is refused at load in any other outbound expression", () => {
    expect(compileExpression("res.body.usage.total_tokens > 10", "outbound")).toEqual({
      ok: false,
      message: "invalid CEL: res.body is readable only in a rate-limit's settle_cost",
    });
  });

  it("is read by a settle expression that selects it, and only then", () => {
    const reads = compileValueExpression("has(res.body.usage) ? res.body.usage.total_tokens : 0", "outbound", { responseBody: true });
    const headerOnly = compileValueExpression("int(res.headers['x-usage'][0])", "outbound", { responseBody: true });
    expect(reads.ok && reads.expression.readsResponseBody).toBe(true);
    expect(headerOnly.ok && headerOnly.expression.readsResponseBody).toBe(false);
  });

  it("converts JSON with whole numbers as int, and refuses a body nested deeper than the bound", () => {
    expect(jsonBodyValue('{"usage":{"total_tokens":42,"ratio":0.5}}')).toEqual(
      new Map([
        [
          "usage",
          new Map<string, unknown>([
            ["total_tokens", 42n],
            ["ratio", 0.5],
          ]),
        ],
      ]),
    );
    expect(jsonBodyValue(`${"[".repeat(MAX_SETTLE_BODY_DEPTH + 1)}${"]".repeat(MAX_SETTLE_BODY_DEPTH + 1)}`)).toBeUndefined();
    expect(jsonBodyValue(`${"[".repeat(30_000)}${"]".repeat(30_000)}`)).toBeUndefined();
    expect(jsonBodyValue("not json")).toBeUndefined();
    expect(jsonBodyValue(String(2 ** 53))).toBe(2 ** 53);
  });

  it("knows JSON content types", () => {
    expect(["application/json; charset=utf-8", "application/problem+json", "APPLICATION/JSON"].map(isJsonContentType)).toEqual([true, true, true]);
    expect(["text/event-stream", "text/plain", null].map(isJsonContentType)).toEqual([false, false, false]);
  });
});

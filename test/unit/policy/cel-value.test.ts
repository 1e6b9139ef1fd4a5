/** Expressions of any result type (`${…}` interpolation, set-vars): bounded, checked and metered like entry expressions. */

import { describe, expect, it } from "vitest";
import { compileValueExpression } from "../../../src/policy/cel.ts";
import { EvaluationBudget } from "../../../src/policy/evaluation-budget.ts";
import { makeExchange } from "../support/exchange.ts";

function value(source: string, exchange = makeExchange({ clientIp: "198.51.100.4", url: "https://a.test/v1/x?y=1" })) {
  const compiled = compileValueExpression(source, "inbound");
  if (!compiled.ok) throw new Error(`does not compile: ${compiled.message}`);
  return compiled.expression.evaluate(exchange);
}

describe("compileValueExpression", () => {
  it("evaluates to a value of any type", () => {
    expect(value("conn.client_ip")).toBe("198.51.100.4");
    expect(value("req.url.path + '!'")).toBe("/v1/x!");
    expect(value("size(req.url.path)")).toBe(5n);
    expect(value("req.method == 'GET'")).toBe(true);
  });

  it("returns an evaluation failure as a message", () => {
    expect(value("req.headers['x-missing'][0]")).toEqual({ error: expect.any(String) });
  });

  it("an index past the end of an empty list says what usually emptied it, not the library's [0, -1)", () => {
    expect(value("int(getReqHeader('x-max-tokens')[0])")).toEqual({
      error:
        "index 0 is past the end of the list (getReqHeader, getResHeader and getQueryParam give an empty one for a header or parameter the request does not carry)",
    });
    expect(value("int(getQueryParam('y')[0])")).toBe(1n);
  });

  it("refuses unknown variables and phases at load, as entry expressions do", () => {
    expect(compileValueExpression("req.pth", "inbound")).toEqual({ ok: false, message: "invalid CEL: unknown field 'pth' of req" });
    expect(compileValueExpression("res.status_code", "inbound")).toEqual({ ok: false, message: "invalid CEL: res is only available in outbound expressions" });
  });

  it("stops at once when the request's budget is spent", () => {
    const exchange = makeExchange({});
    const budget = new EvaluationBudget();
    budget.chargeCel(budget.celWorkLeft());
    const result = value("conn.client_ip", { ...exchange, budget });
    expect(result).toEqual({ error: expect.stringContaining("units of work per request") });
  });
});

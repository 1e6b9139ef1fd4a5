/** `${…}` templates: where each expression ends, and how CEL values are written into text. */

import { celList, celMap, celUint, type CelValue } from "@bufbuild/cel";
import { describe, expect, it } from "vitest";
import { compileValueExpression } from "../../../src/policy/cel.ts";
import { celText, goDouble, MAX_TEXT_NESTING } from "../../../src/policy/cel-text.ts";
import { interpolatedChars, splitTemplate } from "../../../src/policy/template-syntax.ts";
import { makeExchange } from "../support/exchange.ts";

describe("splitTemplate", () => {
  it("separates literal text from expressions", () => {
    expect(splitTemplate("client ${conn.client_ip} on ${req.url.path}!")).toEqual({
      ok: true,
      parts: [{ literal: "client " }, { expression: "conn.client_ip" }, { literal: " on " }, { expression: "req.url.path" }, { literal: "!" }],
    });
  });

  it("a } inside a string literal does not end the expression", () => {
    expect(splitTemplate("${'}'}")).toEqual({ ok: true, parts: [{ expression: "'}'" }] });
    expect(splitTemplate("a${\"x}y\" + '}'}b")).toEqual({ ok: true, parts: [{ literal: "a" }, { expression: "\"x}y\" + '}'" }, { literal: "b" }] });
    expect(splitTemplate("${'it\\'s }'}")).toEqual({ ok: true, parts: [{ expression: "'it\\'s }'" }] });
    expect(splitTemplate("${'''a ' } b'''}")).toEqual({ ok: true, parts: [{ expression: "'''a ' } b'''" }] });
  });

  it("a raw string's backslash escapes nothing", () => {
    expect(splitTemplate("${r'\\'}x")).toEqual({ ok: true, parts: [{ expression: "r'\\'" }, { literal: "x" }] });
  });

  it("a map literal's braces stay inside the expression", () => {
    expect(splitTemplate("${{'a': {'b': 1}}['a']['b']}")).toEqual({ ok: true, parts: [{ expression: "{'a': {'b': 1}}['a']['b']" }] });
  });

  it("has no escape, as ngrok documents none: $${x} is a $ and an expression", () => {
    expect(splitTemplate("$${x}")).toEqual({ ok: true, parts: [{ literal: "$" }, { expression: "x" }] });
    expect(splitTemplate("cost: $5 {not} ${")).toEqual({ ok: false, message: "unterminated ${ at character 16: no closing }" });
  });

  it("refuses what cannot be an expression, saying where", () => {
    expect(splitTemplate("a ${conn.client_ip")).toEqual({ ok: false, message: "unterminated ${ at character 3: no closing }" });
    expect(splitTemplate("${'}")).toEqual({ ok: false, message: "unterminated string literal in ${…} at character 3" });
    expect(splitTemplate("x ${  }")).toEqual({ ok: false, message: "empty ${} at character 3" });
  });

  it("text without ${ is one literal", () => {
    expect(splitTemplate("plain { text } $")).toEqual({ ok: true, parts: [{ literal: "plain { text } $" }] });
    expect(splitTemplate("")).toEqual({ ok: true, parts: [] });
  });
});

/** The value of `source`, evaluated by the real CEL engine. */
function cel(source: string): CelValue {
  const compiled = compileValueExpression(source, "inbound");
  if (!compiled.ok) throw new Error(compiled.message);
  const value = compiled.expression.evaluate(makeExchange({ headers: { "x-a": "1" } }));
  if (value !== null && typeof value === "object" && "error" in value && Object.keys(value).length === 1) throw new Error(String(value.error));
  return value as CelValue;
}

describe("celText", () => {
  it("writes scalars as cel-go's string() does", () => {
    expect(celText(cel("'raw \"text\"'"), 100)).toBe('raw "text"');
    expect(celText(cel("-42"), 100)).toBe("-42");
    expect(celText(cel("42u"), 100)).toBe("42");
    expect(celText(cel("true"), 100)).toBe("true");
    expect(celText(cel("null"), 100)).toBe("null");
    expect(celText(cel("b'bytes'"), 100)).toBe("bytes");
    expect(celText(cel("timestamp('2024-06-24T15:30:00Z')"), 100)).toBe("2024-06-24T15:30:00Z");
    expect(celText(cel("timestamp('2024-06-24T15:30:00.120Z')"), 100)).toBe("2024-06-24T15:30:00.12Z");
    expect(celText(cel("duration('90s')"), 100)).toBe("90s");
    expect(celText(cel("duration('1.5s')"), 100)).toBe("1.5s");
    expect(celText(cel("type(1)"), 100)).toBe("int");
  });

  it("writes doubles in Go's shortest %g form", () => {
    const cases: Array<[number, string]> = [
      [1.5, "1.5"],
      [100, "100"],
      [999999, "999999"],
      [1e6, "1e+06"],
      [1234567, "1.234567e+06"],
      [0.0001, "0.0001"],
      [0.00001, "1e-05"],
      [-2.5e-7, "-2.5e-07"],
      [1e21, "1e+21"],
      [1.7976931348623157e308, "1.7976931348623157e+308"],
      [0, "0"],
      [-0, "-0"],
      [Number.NaN, "NaN"],
      [Number.POSITIVE_INFINITY, "+Inf"],
      [Number.NEGATIVE_INFINITY, "-Inf"],
    ];
    for (const [value, text] of cases) expect(goDouble(value)).toBe(text);
    expect(celText(cel("double(3) / 2.0"), 100)).toBe("1.5");
  });

  it("writes lists and maps as JSON, which ngrok does not document", () => {
    expect(celText(cel("[1, 2u, 1.5, 'a', true, null, b'hi', [timestamp('2024-06-24T15:30:00Z')]]"), 1000)).toBe(
      '[1,2,1.5,"a",true,null,"aGk=",["2024-06-24T15:30:00Z"]]',
    );
    expect(celText(cel("{'k': {'n': [1]}, 2: 'two', true: 1.0/0.0}"), 1000)).toBe('{"k":{"n":[1]},"2":"two","true":"+Inf"}');
    expect(celText(cel("req.headers"), 1000)).toBe('{"x-a":["1"]}');
  });

  it(`stops writing at max characters, however large the value`, () => {
    const large = celList(Array.from({ length: 100_000 }, (_, i) => BigInt(i)));
    expect(celText(large, 10)).toBe("[0,1,2,3,4");
    expect(celText("x".repeat(100_000), 7)).toBe("xxxxxxx");
    expect(celText(celMap(new Map([["k", celUint(7n)]])), 3)).toBe('{"k');
  });

  it(`writes lists nested deeper than ${MAX_TEXT_NESTING} as "…", never overflowing the stack`, () => {
    let value: CelValue = celList([]);
    for (let i = 0; i < 100_000; i++) value = celList([value]);
    const text = celText(value, 1000);
    expect(text).toBe(`${"[".repeat(MAX_TEXT_NESTING + 1)}"…"${"]".repeat(MAX_TEXT_NESTING + 1)}`);
  });
});

describe("interpolatedChars", () => {
  it("counts the characters of every ${…} expression in a value, and nothing else", () => {
    expect(interpolatedChars([{ type: "add-headers", config: { headers: { a: "x ${ab} ${'}'}", b: "plain", c: "${unclosed" } } }])).toBe(5);
    expect(interpolatedChars(Array.from({ length: 200_000 }, () => "${a}"))).toBe(200_000);
  });
});

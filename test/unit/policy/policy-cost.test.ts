/**
 * The cost bounds of traffic policies (src/policy/limits.ts, docs/security/policy-cost.md): each one is
 * refused at load with a located message, one small fixture each.
 */

import { describe, expect, it } from "vitest";
import { compileExpression } from "../../../src/policy/cel.ts";
import { compilePolicy, loadPolicy } from "../../../src/policy/compile.ts";
import { formatIssue } from "../../../src/policy/issues.ts";
import { makeExchange } from "../support/exchange.ts";

const deny = [{ type: "deny" }];

/** The issues of a tenant policy as sent in a start_tunnel frame; [] when it compiles. */
function refusal(policy: unknown): string[] {
  const result = compilePolicy(policy, { prefix: ["traffic_policy"] });
  return result.ok ? [] : result.issues.map(formatIssue);
}

function withExpressions(...expressions: string[]) {
  return { inbound: [{ expressions, actions: deny }] };
}

/** The one issue of a policy whose first expression is `source`. */
function expressionRefusal(source: string): string[] {
  return refusal(withExpressions(source));
}

const AT = "traffic_policy.inbound[0].expressions[0]: ";

function nestedLists(depth: number): unknown {
  return JSON.parse("[".repeat(depth) + "]".repeat(depth));
}

describe("the pathological policies of the review are refused at load", () => {
  it("a 158-character chain of replace() calls that doubles the string each time", () => {
    const source = `req.url.query${".replace('a', 'aa')".repeat(7)} == 'abcdef'`;
    expect(source.length).toBe(158);
    expect(expressionRefusal(source)).toEqual([`${AT}replace() must not lengthen a string: the replacement "aa" is longer than the text it replaces, "a"`]);
  });

  it("three nested all() over 100-element lists", () => {
    const list = `'${Array.from({ length: 100 }, (_, i) => i).join(",")}'.split(',')`;
    expect(expressionRefusal(`${list}.all(x, ${list}.all(y, ${list}.all(z, x + y + z != '')))`)).toEqual([
      `${AT}comprehensions (all, exists, exists_one, map, filter) nest deeper than the limit of 1`,
    ]);
  });

  it("matches() with (a|aa){1000} against a header", () => {
    expect(expressionRefusal("getReqHeader('x-text')[0].matches('(a|aa){1000}')")).toEqual([
      `${AT}pattern "(a|aa){1000}" repeats 1000 times, over the limit of 100`,
    ]);
  });

  it("a 420 KB policy", () => {
    const policy = { inbound: [{ actions: [{ type: "custom-response", config: { status_code: 200, body: "x".repeat(420 * 1024) } }] }] };
    expect(refusal(policy)).toEqual(["traffic_policy: exceeds the limit of 16384 bytes for a policy (as JSON)"]);
  });
});

describe("hostile documents come back as issues, never as a stack overflow", () => {
  it("100,000 nested lists are refused at the 12th level", () => {
    expect(refusal(nestedLists(100_000))).toEqual([`traffic_policy${"[0]".repeat(12)}: exceeds the limit of 12 nested maps and lists`]);
  });

  it("an expression of 20,000 terms is refused by its length before it is parsed", () => {
    const source = Array.from({ length: 20_000 }, () => "1").join("+");
    expect(compileExpression(source, "inbound")).toEqual({ ok: false, message: "expression exceeds the limit of 1024 characters (has 39999)" });
  });

  it("a sparse list is measured like null entries", () => {
    // biome-ignore lint/suspicious/noSparseArray: a sparse list is the input under test
    expect(refusal([, ,])).toEqual(["traffic_policy: must be a map, got a list"]);
  });
});

describe("document bounds", () => {
  it("a tenant policy over 16384 bytes as JSON is refused; an operator file of the same size loads", () => {
    const body = "x".repeat(16 * 1024);
    expect(refusal({ inbound: [{ actions: [{ type: "custom-response", config: { body } }] }] })).toEqual([
      "traffic_policy: exceeds the limit of 16384 bytes for a policy (as JSON)",
    ]);
    const file = JSON.stringify({ inbound: [{ actions: [{ type: "custom-response", config: { body } }] }] });
    expect(loadPolicy(file, "policies/big.json").ok).toBe(true);
  });

  it("an operator file over 2 MiB is refused", () => {
    const file = JSON.stringify({ inbound: [{ actions: [{ type: "custom-response", config: { body: "x".repeat(2 * 1024 * 1024) } }] }] });
    const result = loadPolicy(file, "policies/huge.json");
    expect(result.ok ? [] : result.issues.map(formatIssue)).toEqual(["policies/huge.json:1: exceeds the limit of 2097152 bytes for a policy (as JSON)"]);
  });

  it("a phase of 65 entries is refused at the phase", () => {
    expect(refusal({ inbound: Array.from({ length: 65 }, () => ({ actions: deny })) })).toEqual([
      "traffic_policy.inbound: exceeds the limit of 64 entries per phase",
    ]);
  });

  it("an entry of 17 expressions is refused at its expressions", () => {
    expect(refusal(withExpressions(...Array.from({ length: 17 }, () => "true")))).toEqual([
      "traffic_policy.inbound[0].expressions: exceeds the limit of 16 expressions per entry",
    ]);
  });

  it("an entry of 17 actions is refused at its actions", () => {
    expect(refusal({ outbound: [{ actions: Array.from({ length: 17 }, () => ({ type: "deny" })) }] })).toEqual([
      "traffic_policy.outbound[0].actions: exceeds the limit of 16 actions per entry",
    ]);
  });

  it("expressions of more than 4096 characters together are refused before any is parsed", () => {
    const long = `req.url.path == '${"a".repeat(980)}'`;
    expect(refusal(withExpressions(long, long, long, long, long))).toEqual([
      "traffic_policy: expressions together exceed the limit of 4096 characters per policy (have 4990)",
    ]);
  });

  it("more than 16 matches() patterns in one policy are refused", () => {
    const expressions = Array.from({ length: 17 }, (_, i) => `req.url.path.matches('^/p${i}$')`);
    expect(
      refusal({
        inbound: [
          { expressions: expressions.slice(0, 9), actions: deny },
          { expressions: expressions.slice(9), actions: deny },
        ],
      }),
    ).toEqual(["traffic_policy: matches() patterns exceed the limit of 16 per policy (have 17)"]);
  });
});

describe("expression size", () => {
  it("an expression of 1025 characters is refused", () => {
    expect(expressionRefusal(`req.url.path == '${"a".repeat(1025 - 18)}'`)).toEqual([`${AT}expression exceeds the limit of 1024 characters (has 1025)`]);
  });

  it("33 nested parentheses are refused before parsing; brackets inside strings do not count", () => {
    expect(expressionRefusal(`${"(".repeat(33)}true${")".repeat(33)}`)).toEqual([`${AT}expression exceeds the limit of 32 nested (), [] and {}`]);
    expect(expressionRefusal(`req.url.path != '${"(".repeat(40)}' && req.method != "${"[".repeat(40)}"`)).toEqual([]);
  });

  it("an expression of more than 256 nodes is refused", () => {
    expect(expressionRefusal(`[${Array.from({ length: 300 }, () => "1").join(",")}].size() > 0`)).toEqual([`${AT}expression exceeds the limit of 256 nodes`]);
  });
});

describe("loops", () => {
  it("one comprehension inside another's body is refused; one after another is not", () => {
    expect(expressionRefusal("[1, 2].exists(x, [3].all(y, y > x))")).toEqual([
      `${AT}comprehensions (all, exists, exists_one, map, filter) nest deeper than the limit of 1`,
    ]);
    expect(expressionRefusal("[1, 2].map(x, x * 2).all(y, y > 0)")).toEqual([]);
  });

  it("a loop over a list from the request may not read the request in its body", () => {
    expect(expressionRefusal("req.url.path.split('/').exists(part, part == req.method)")).toEqual([
      `${AT}a comprehension over a list that is not a literal must not read req in its body (its cost would grow with the square of the request)`,
    ]);
    expect(expressionRefusal("req.url.query.split('&').exists(pair, hasReqHeader(pair))")).toEqual([
      `${AT}a comprehension over a list that is not a literal must not read hasReqHeader() in its body (its cost would grow with the square of the request)`,
    ]);
  });

  it("a loop over a list literal may read the request, and a loop over the request may read its own elements", () => {
    expect(expressionRefusal("['/a', '/b'].exists(prefix, req.url.path.startsWith(prefix))")).toEqual([]);
    expect(expressionRefusal("req.headers.exists(name, name.startsWith('x-'))")).toEqual([]);
  });
});

describe("calls that can lengthen a value", () => {
  it("more than 8 in one expression are refused", () => {
    expect(expressionRefusal(`req.method${" + 'x'".repeat(9)} == ''`)).toEqual([
      `${AT}expression exceeds the limit of 8 calls that can lengthen a value (+ on strings or lists, join, format)`,
    ]);
  });

  it("they do not take each other's results, but + chains do", () => {
    expect(expressionRefusal("[req.method + 'x'].join(',') == ''")).toEqual([
      `${AT}join must not take the result of +: calls that can lengthen a value do not nest (+ on strings or lists, join, format)`,
    ]);
    expect(expressionRefusal("req.method + '/' + req.host == ''")).toEqual([]);
  });

  it("they are not used in a loop body; + with a number literal is arithmetic", () => {
    expect(expressionRefusal("['a'].map(x, x + 'b').size() == 1")).toEqual([`${AT}+ inside a comprehension body would lengthen a value once per element`]);
    expect(expressionRefusal("[1, 2].all(n, n + 1 > 0)")).toEqual([]);
  });

  it("replace() takes literals and never lengthens", () => {
    expect(expressionRefusal("req.url.path.replace('a', req.method) == ''")).toEqual([
      `${AT}replace() takes string literals, so what it can do to a string is known when the policy loads`,
    ]);
    expect(expressionRefusal("req.url.path.replace('', '-') == ''")).toEqual([
      `${AT}replace() must not lengthen a string: the replacement "-" is longer than the text it replaces, ""`,
    ]);
    expect(expressionRefusal("req.url.path.replace('//', '/') == '/'")).toEqual([]);
  });

  it("join() takes a literal separator of at most 16 characters, format() a literal format string", () => {
    expect(expressionRefusal(`req.url.path.split('/').join('${"-".repeat(17)}') == ''`)).toEqual([
      `${AT}the separator of join() must be a string literal of at most 16 characters`,
    ]);
    expect(expressionRefusal("req.method.format([req.host]) == ''")).toEqual([
      `${AT}the format string of format() must be a string literal of at most 16 characters`,
    ]);
    expect(expressionRefusal("'%s:%s'.format([req.method, req.host]) == 'GET:a'")).toEqual([]);
  });
});

describe("matches() patterns", () => {
  it("must be string literals", () => {
    expect(expressionRefusal("req.url.path.matches(getReqHeader('x-pattern')[0])")).toEqual([
      `${AT}the pattern of matches() must be a string literal, so it is compiled once when the policy loads`,
    ]);
  });

  it("are refused past 256 characters, 100 repetitions or 500 instructions, and when they do not compile", () => {
    expect(expressionRefusal(`req.url.path.matches('${"a".repeat(257)}')`)).toEqual([
      `${AT}pattern "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"… exceeds the limit of 256 characters (has 257)`,
    ]);
    expect(expressionRefusal("req.url.path.matches('a{2,101}')")).toEqual([`${AT}pattern "a{2,101}" repeats 101 times, over the limit of 100`]);
    expect(expressionRefusal("req.url.path.matches('(abcdef){100}')")).toEqual([
      `${AT}pattern "(abcdef){100}" compiles to 802 instructions, over the limit of 500`,
    ]);
    expect(expressionRefusal("req.url.path.matches('[')")).toEqual([
      `${AT}pattern "[" is not a valid RE2 expression: error parsing regexp: missing closing ]: \`[\``,
    ]);
  });

  it("share a budget of 524288 units of regex work per request; past it matches() is an evaluation error", () => {
    const compile = (source: string) => {
      const compiled = compileExpression(source, "inbound");
      if (!compiled.ok) throw new Error(compiled.message);
      return compiled.expression;
    };
    // '^a+$' compiles to 6 instructions: a 50,000-character header costs 300,000 units a match.
    const first = compile("getReqHeader('x-text')[0].matches('^a+$')");
    const second = compile("getReqHeader('x-text')[0].matches('^a+$')");
    const request = makeExchange({ headers: { "x-text": "a".repeat(50_000) } });
    expect(first.evaluate(request)).toBe(true);
    expect(second.evaluate(request)).toEqual({
      error: "matches() exceeds the limit of 524288 units of regex work per request (text characters × pattern instructions)",
    });
    expect(first.evaluate(makeExchange({ headers: { "x-text": "a".repeat(50_000) } }))).toBe(true);
  });
});

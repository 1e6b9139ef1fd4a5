/**
 * Every limit of a traffic policy document fed a bad value, with the exact message (file, line, path),
 * one small fixture each; and the valid forms that must keep loading.
 */

import { describe, expect, it } from "vitest";
import { loadPolicy } from "../../../src/policy/compile.ts";
import { formatIssue } from "../../../src/policy/issues.ts";

const FILE = "policies/api.yaml";

/** The formatted problems of a policy file; [] when it loads. */
function problems(text: string, file = FILE): string[] {
  const result = loadPolicy(text, file);
  return result.ok ? [] : result.issues.map(formatIssue);
}

const lines = (...text: string[]) => `${text.join("\n")}\n`;

/** One inbound rate-limit action; its config lines start on line 6. */
function rateLimit(...config: string[]): string {
  return lines("inbound:", "  - name: api", "    actions:", "      - type: rate-limit", "        config:", ...config.map((line) => `          ${line}`));
}

/** One inbound action of `type`; its config lines start on line 5. */
function action(type: string, ...config: string[]): string {
  return lines(
    "inbound:",
    "  - actions:",
    `      - type: ${type}`,
    ...(config.length > 0 ? ["        config:"] : []),
    ...config.map((line) => `          ${line}`),
  );
}

const at = (line: number, path: string, message: string) => `${FILE}:${line}: ${path}: ${message}`;
const CONFIG = "inbound[0].actions[0].config";

describe("rate-limit name", () => {
  it("a name of 1024 characters is refused", () => {
    expect(problems(rateLimit(`name: ${"n".repeat(1024)}`, "capacity: 10", "rate: 60s"))).toEqual([
      at(6, `${CONFIG}.name`, "must be shorter than 1024 characters"),
    ]);
  });

  it("a name of 1023 characters loads", () => {
    expect(problems(rateLimit(`name: ${"n".repeat(1023)}`, "capacity: 10", "rate: 60s"))).toEqual([]);
  });

  it("an empty name is refused", () => {
    expect(problems(rateLimit('name: ""', "capacity: 10", "rate: 60s"))).toEqual([at(6, `${CONFIG}.name`, "must not be empty")]);
  });

  it("a name that is not a string is refused", () => {
    expect(problems(rateLimit("name: 5", "capacity: 10", "rate: 60s"))).toEqual([at(6, `${CONFIG}.name`, "must be a string, got number 5")]);
  });
});

describe("rate-limit capacity", () => {
  it.each([
    ["0", "must be at least 1"],
    ["-1", "must be at least 1"],
    ["2000000001", "must be at most 2000000000"],
    ["1.5", "must be an integer, got number 1.5"],
    ['"100"', 'must be an integer, got string "100"'],
    ["null", "must be an integer, got null"],
    [".inf", "must be an integer, got number Infinity"],
    ["[100]", "must be an integer, got a list"],
  ])("capacity %s is refused: %s", (value, message) => {
    expect(problems(rateLimit(`capacity: ${value}`, "rate: 60s"))).toEqual([at(6, `${CONFIG}.capacity`, message)]);
  });

  it("a missing capacity is reported at its config", () => {
    expect(problems(rateLimit("rate: 60s"))).toEqual([at(5, `${CONFIG}.capacity`, "is required")]);
  });

  it("capacities 1 and 2000000000 load", () => {
    expect(problems(rateLimit("capacity: 1", "rate: 60s"))).toEqual([]);
    expect(problems(rateLimit("capacity: 2000000000", "rate: 60s"))).toEqual([]);
  });
});

describe("rate-limit rate", () => {
  it.each([
    ["59s", "must be a multiple of 10s"],
    ["61s", "must be a multiple of 10s"],
    ["60500ms", "must be a multiple of 10s"],
    ["50s", "must be at least 60s"],
    ["0s", "must be at least 60s"],
    ["24h10s", "must be at most 24h"],
    ["25h", "must be at most 24h"],
    ["abc", "must be a duration such as 60s, 10m or 1h (got 'abc')"],
    ['"1m 30s"', "must be a duration such as 60s, 10m or 1h (got '1m 30s')"],
    ["1d", "must be a duration such as 60s, 10m or 1h (got '1d')"],
    ['""', "must be a duration such as 60s, 10m or 1h (got '')"],
    ["60", "must be a duration string such as 60s, 10m or 1h, got number 60"],
    ["[60s]", "must be a duration string such as 60s, 10m or 1h, got a list"],
  ])("rate %s is refused: %s", (value, message) => {
    expect(problems(rateLimit(`rate: ${value}`, "capacity: 10"))).toEqual([at(6, `${CONFIG}.rate`, message)]);
  });

  it("the example of the specification: policies/api.yaml:12: inbound[0].actions[0].config.rate: must be a multiple of 10s", () => {
    const text = lines(
      "# Rate limits of the public API.",
      "inbound:",
      "  - name: per key",
      "    expressions:",
      "      - \"hasReqHeader('X-Api-Key')\"",
      "    actions:",
      "      - type: rate-limit",
      "        config:",
      "          name: per-key",
      "          algorithm: sliding_window",
      "          capacity: 100",
      "          rate: 59s",
      "          bucket_key: [\"req.headers['x-api-key']\"]",
    );
    expect(problems(text)).toEqual(["policies/api.yaml:12: inbound[0].actions[0].config.rate: must be a multiple of 10s"]);
  });

  it("a missing rate is reported at its config", () => {
    expect(problems(rateLimit("capacity: 10"))).toEqual([at(5, `${CONFIG}.rate`, "is required")]);
  });

  it.each(["60s", "70s", "1m", "90s", "1m30s", "10m", "1h", "1h30m", "1440m", "86400s", "24h", "60000ms"])("rate %s loads", (rate) => {
    expect(problems(rateLimit("capacity: 10", `rate: ${rate}`))).toEqual([]);
  });
});

describe("rate-limit bucket_key", () => {
  it("an empty list is refused", () => {
    expect(problems(rateLimit("capacity: 10", "rate: 60s", "bucket_key: []"))).toEqual([at(8, `${CONFIG}.bucket_key`, "must have at least 1 element")]);
  });

  it("11 elements are refused", () => {
    const eleven = Array.from({ length: 11 }, () => "conn.client_ip").join(", ");
    expect(problems(rateLimit("capacity: 10", "rate: 60s", `bucket_key: [${eleven}]`))).toEqual([
      at(8, `${CONFIG}.bucket_key`, "must have at most 10 elements"),
    ]);
  });

  it("10 elements load", () => {
    const ten = Array.from({ length: 10 }, (_, i) => `"req.headers['x-${i}']"`).join(", ");
    expect(problems(rateLimit("capacity: 10", "rate: 60s", `bucket_key: [${ten}]`))).toEqual([]);
  });

  const NOT_A_STRING = "must be a CEL expression yielding a string (or an int, uint or bool), and this one is";
  const LIST = `${NOT_A_STRING} list(string) (take one element, such as [0])`;

  it.each([
    ["req.path", "invalid CEL: unknown field 'path' of req"],
    ["\"req.headers['X-Upper']\"", LIST],
    ['"req.headers[\\"x-api-key\\"]"', LIST],
    ["\"getReqHeader('Bad Name')\"", LIST],
    ["\"getReqHeader('')\"", LIST],
    ["\"req.cookies['session'][0]\"", `${NOT_A_STRING} req.cookies[name][i] (read one of its fields)`],
    ['"res.status_code"', "invalid CEL: res is only available in outbound expressions"],
    ["\"[1].map(x, [1].map(y, 'k'))[0][0]\"", "comprehensions (all, exists, exists_one, map, filter) nest deeper than the limit of 1"],
  ])("element %s is refused, at its own line: %s", (element, message) => {
    expect(problems(rateLimit("capacity: 10", "rate: 60s", "bucket_key:", "  - conn.client_ip", `  - ${element}`))).toEqual([
      at(10, `${CONFIG}.bucket_key[1]`, message),
    ]);
  });

  it("an empty element is refused as CEL that does not parse", () => {
    expect(problems(rateLimit("capacity: 10", "rate: 60s", "bucket_key:", "  - conn.client_ip", '  - ""'))).toEqual([
      expect.stringMatching(/^policies\/api\.yaml:10: inbound\[0\]\.actions\[0\]\.config\.bucket_key\[1\]: invalid CEL: 1:1: found end of input/),
    ]);
  });

  it.each([
    ["conn.client_ip + req.host"],
    ["req.url.path"],
    ["\"getReqHeader('x-tenant')[0]\""],
    ["\"hasReqHeader('host') ? getReqHeader('host')[0] : 'unknown'\""],
    ["req.url.port"],
    ["\"req.url.query_params['plan'][0].lowerAscii()\""],
    ["vars.tenant"],
  ])("a CEL element yielding a string, an int or a dyn loads: %s", (element) => {
    expect(problems(rateLimit("capacity: 10", "rate: 60s", "bucket_key:", "  - conn.client_ip", `  - ${element}`))).toEqual([]);
  });

  it("an element that is not a string is refused", () => {
    expect(problems(rateLimit("capacity: 10", "rate: 60s", "bucket_key:", "  - 5"))).toEqual([
      at(9, `${CONFIG}.bucket_key[0]`, "must be a string, got number 5"),
    ]);
  });

  it("a bucket_key that is not a list is refused with that reason alone", () => {
    expect(problems(rateLimit("capacity: 10", "rate: 60s", "bucket_key: conn.client_ip"))).toEqual([
      at(8, `${CONFIG}.bucket_key`, 'must be a list, got string "conn.client_ip"'),
    ]);
  });

  it("all four forms load", () => {
    const text = rateLimit(
      "capacity: 10",
      "rate: 60s",
      "bucket_key:",
      "  - req.host",
      "  - conn.client_ip",
      "  - \"req.headers['x-api-key']\"",
      "  - \"getReqHeader('X-Api-Key')\"",
    );
    expect(problems(text)).toEqual([]);
  });
});

describe("rate-limit scope", () => {
  it("a scope other than ingress or global is refused", () => {
    expect(problems(rateLimit("capacity: 10", "rate: 60s", "scope: world"))).toEqual([
      at(8, `${CONFIG}.scope`, 'must be ingress or global, got string "world"'),
    ]);
  });

  it("ingress and global load", () => {
    expect(problems(rateLimit("capacity: 10", "rate: 60s", "scope: ingress"))).toEqual([]);
    expect(problems(rateLimit("capacity: 10", "rate: 60s", "scope: global"))).toEqual([]);
  });
});

describe("rate-limit algorithm and keys", () => {
  it("algorithm fixed_window is refused", () => {
    expect(problems(rateLimit("algorithm: fixed_window", "capacity: 10", "rate: 60s"))).toEqual([
      at(6, `${CONFIG}.algorithm`, 'must be sliding_window, got string "fixed_window"'),
    ]);
  });

  it("an algorithm that is not a string is refused", () => {
    expect(problems(rateLimit("algorithm: 1", "capacity: 10", "rate: 60s"))).toEqual([at(6, `${CONFIG}.algorithm`, "must be sliding_window, got number 1")]);
  });

  it("algorithm sliding_window loads", () => {
    expect(problems(rateLimit("algorithm: sliding_window", "capacity: 10", "rate: 60s"))).toEqual([]);
  });

  it("an unknown config key is refused at its line", () => {
    expect(problems(rateLimit("capacity: 10", "rate: 60s", "burst: 5"))).toEqual([at(8, `${CONFIG}.burst`, "unknown key")]);
  });

  it("a missing config is refused", () => {
    expect(problems(action("rate-limit"))).toEqual([at(3, "inbound[0].actions[0].config", "is required")]);
  });

  it("a config that is not a map is refused", () => {
    expect(problems(lines("inbound:", "  - actions:", "      - type: rate-limit", "        config: [10, 60s]"))).toEqual([
      at(4, "inbound[0].actions[0].config", "must be a map, got a list"),
    ]);
  });

  it("every problem of a config is reported at once, each at its line", () => {
    expect(problems(rateLimit("capacity: 0", "rate: 61s", "algorithm: token_bucket"))).toEqual([
      at(6, `${CONFIG}.capacity`, "must be at least 1"),
      at(7, `${CONFIG}.rate`, "must be a multiple of 10s"),
      at(8, `${CONFIG}.algorithm`, 'must be sliding_window, got string "token_bucket"'),
    ]);
  });

  it("an outbound rate-limit is checked the same way, with its own path", () => {
    const text = lines(
      "inbound: []",
      "outbound:",
      "  - actions:",
      "      - type: deny",
      "  - actions:",
      "      - type: rate-limit",
      "        config: { capacity: 10, rate: 5m5s }",
    );
    expect(problems(text)).toEqual([at(7, "outbound[1].actions[0].config.rate", "must be a multiple of 10s")]);
  });
});

describe("action types", () => {
  const TYPES =
    "rate-limit, deny, custom-response, add-headers, remove-headers, log, restrict-ips, forward-internal, set-vars, verify-webhook, jwt-validation, url-rewrite, redirect, basic-auth, circuit-breaker";

  it("an unknown action type is refused", () => {
    expect(problems(action("throttle", "rate: 5"))).toEqual([at(3, "inbound[0].actions[0].type", `unknown action type "throttle" (expected one of ${TYPES})`)]);
  });

  it("a missing action type is refused", () => {
    expect(problems(lines("inbound:", "  - actions:", "      - config: {}"))).toEqual([at(3, "inbound[0].actions[0].type", `is required (one of ${TYPES})`)]);
  });

  it("an action type that is not a string is refused", () => {
    expect(problems(action("5"))).toEqual([at(3, "inbound[0].actions[0].type", `unknown action type 5 (expected one of ${TYPES})`)]);
  });

  it("an unknown key of an action is refused", () => {
    expect(problems(lines("inbound:", "  - actions:", "      - type: deny", "        when: always"))).toEqual([
      at(4, "inbound[0].actions[0].when", "unknown key"),
    ]);
  });

  it("an action that is not a map is refused", () => {
    expect(problems(lines("inbound:", "  - actions:", "      - deny"))).toEqual([at(3, "inbound[0].actions[0]", 'must be a map, got string "deny"')]);
  });
});

describe("deny", () => {
  it.each([
    ["200", "must be at least 400"],
    ["600", "must be at most 599"],
    ["403.5", "must be an integer, got number 403.5"],
    ['"403"', 'must be an integer, got string "403"'],
  ])("status_code %s is refused: %s", (value, message) => {
    expect(problems(action("deny", `status_code: ${value}`))).toEqual([at(5, `${CONFIG}.status_code`, message)]);
  });

  it("an unknown config key is refused", () => {
    expect(problems(action("deny", "status: 403"))).toEqual([at(5, `${CONFIG}.status`, "unknown key")]);
  });

  it("deny without config and with status 400 or 599 loads", () => {
    expect(problems(action("deny"))).toEqual([]);
    expect(problems(action("deny", "status_code: 400"))).toEqual([]);
    expect(problems(action("deny", "status_code: 599"))).toEqual([]);
  });
});

describe("custom-response", () => {
  it.each([
    ["199", "must be at least 200"],
    ["600", "must be at most 599"],
    ['"200"', 'must be an integer, got string "200"'],
  ])("status_code %s is refused: %s", (value, message) => {
    expect(problems(action("custom-response", `status_code: ${value}`))).toEqual([at(5, `${CONFIG}.status_code`, message)]);
  });

  it("a body that is not a string is refused", () => {
    expect(problems(action("custom-response", "body: 5"))).toEqual([at(5, `${CONFIG}.body`, "must be a string, got number 5")]);
  });

  it("a body of more than 1000000 characters is refused", () => {
    expect(problems(action("custom-response", `body: ${"b".repeat(1_000_001)}`))).toEqual([at(5, `${CONFIG}.body`, "must be at most 1000000 characters")]);
  });

  it.each(["204", "205", "304"])("a body with status %s (which cannot carry one) is refused", (status) => {
    expect(problems(action("custom-response", `status_code: ${status}`, "body: hello"))).toEqual([
      at(6, `${CONFIG}.body`, "must be absent when status_code is 204, 205, 304"),
    ]);
  });

  it("a header name that is not a token is refused", () => {
    expect(problems(action("custom-response", "headers:", '  "x bad": 1'))).toEqual([at(6, `${CONFIG}.headers["x bad"]`, "is not a valid header name")]);
  });

  it("a header value with a line break is refused", () => {
    expect(problems(action("custom-response", "headers:", '  x-a: "one\\r\\nx-b: two"'))).toEqual([
      at(6, `${CONFIG}.headers.x-a`, "is not a valid header value (no line breaks, NUL or characters beyond U+00FF)"),
    ]);
  });

  it("a header value that is not a string, number or boolean is refused", () => {
    expect(problems(action("custom-response", "headers:", "  x-a: [1]"))).toEqual([at(6, `${CONFIG}.headers.x-a`, "must be a string, number or boolean")]);
  });

  it("an unknown config key is refused", () => {
    expect(problems(action("custom-response", "content: hi"))).toEqual([at(5, `${CONFIG}.content`, "unknown key")]);
  });

  it("a missing config is refused", () => {
    expect(problems(action("custom-response"))).toEqual([at(3, `${CONFIG}`, "is required")]);
  });
});

describe("add-headers and remove-headers", () => {
  it("add-headers with no header is refused", () => {
    expect(problems(action("add-headers", "headers: {}"))).toEqual([at(5, `${CONFIG}.headers`, "must name at least 1 header")]);
  });

  it("add-headers with a bad header name is refused", () => {
    expect(problems(action("add-headers", "headers:", '  "x:y": 1'))).toEqual([at(6, `${CONFIG}.headers["x:y"]`, "is not a valid header name")]);
  });

  it("add-headers with a value beyond Latin-1 is refused", () => {
    expect(problems(action("add-headers", "headers:", "  x-price: 5€"))).toEqual([
      at(6, `${CONFIG}.headers.x-price`, "is not a valid header value (no line breaks, NUL or characters beyond U+00FF)"),
    ]);
  });

  it("add-headers with a list of headers is refused", () => {
    expect(problems(action("add-headers", "headers: [x-a]"))).toEqual([at(5, `${CONFIG}.headers`, "must be a map, got a list")]);
  });

  it("add-headers without headers is refused", () => {
    expect(problems(action("add-headers", "header: { x-a: 1 }"))).toEqual([
      at(4, `${CONFIG}.headers`, "is required"),
      at(5, `${CONFIG}.header`, "unknown key"),
    ]);
  });

  it("remove-headers with no header is refused", () => {
    expect(problems(action("remove-headers", "headers: []"))).toEqual([at(5, `${CONFIG}.headers`, "must name at least 1 header")]);
  });

  it("remove-headers with a bad header name is refused", () => {
    expect(problems(action("remove-headers", "headers:", "  - server", '  - "bad name"'))).toEqual([
      at(7, `${CONFIG}.headers[1]`, "is not a valid header name"),
    ]);
  });

  it("remove-headers with a single name instead of a list is refused", () => {
    expect(problems(action("remove-headers", "headers: server"))).toEqual([at(5, `${CONFIG}.headers`, 'must be a list, got string "server"')]);
  });
});

describe("document and entries", () => {
  it("an unknown top-level key is refused", () => {
    expect(problems(lines("inbound: []", "inbuond: []"))).toEqual([at(2, "inbuond", "unknown key")]);
  });

  it("an unknown entry key is refused", () => {
    expect(problems(lines("inbound:", "  - actions:", "      - type: deny", "    when: always"))).toEqual([at(4, "inbound[0].when", "unknown key")]);
  });

  it("a document that is a list is refused", () => {
    expect(problems(lines("- type: deny"))).toEqual([`${FILE}:1: must be a map, got a list`]);
  });

  it("a document that is a scalar is refused", () => {
    expect(problems(lines("deny"))).toEqual([`${FILE}:1: must be a map, got string "deny"`]);
  });

  it("inbound that is not a list is refused", () => {
    expect(problems(lines("inbound:", "  actions: []"))).toEqual([at(1, "inbound", "must be a list of entries, got a map")]);
  });

  it("an entry that is not a map is refused", () => {
    expect(problems(lines("outbound:", "  - deny"))).toEqual([at(2, "outbound[0]", 'must be a map, got string "deny"')]);
  });

  it("an entry name of 1024 characters is refused", () => {
    expect(problems(lines("inbound:", `  - name: ${"e".repeat(1024)}`, "    actions: [{ type: deny }]"))).toEqual([
      at(2, "inbound[0].name", "must be shorter than 1024 characters"),
    ]);
  });

  it("an entry name that is not a string is refused", () => {
    expect(problems(lines("inbound:", "  - name: [a]", "    actions: [{ type: deny }]"))).toEqual([at(2, "inbound[0].name", "must be a string, got a list")]);
  });

  it("an entry without actions is refused", () => {
    expect(problems(lines("inbound:", "  - name: nothing"))).toEqual([at(2, "inbound[0].actions", "is required")]);
  });

  it("an entry with an empty action list is refused", () => {
    expect(problems(lines("inbound:", "  - actions: []"))).toEqual([at(2, "inbound[0].actions", "must have at least 1 action")]);
  });

  it("actions that are not a list are refused", () => {
    expect(problems(lines("inbound:", "  - actions:", "      type: deny"))).toEqual([at(2, "inbound[0].actions", "must be a list of actions, got a map")]);
  });

  it("expressions that are not a list are refused", () => {
    expect(problems(lines("inbound:", "  - expressions: \"req.method == 'GET'\"", "    actions: [{ type: deny }]"))).toEqual([
      at(2, "inbound[0].expressions", "must be a list of CEL strings, got string \"req.method == 'GET'\""),
    ]);
  });

  it("an expression that is not a string is refused", () => {
    expect(problems(lines("inbound:", "  - expressions: [true]", "    actions: [{ type: deny }]"))).toEqual([
      at(2, "inbound[0].expressions[0]", "must be a string, got boolean true"),
    ]);
  });

  it("an empty expression is refused", () => {
    expect(problems(lines("inbound:", "  - expressions:", '      - ""', "    actions: [{ type: deny }]"))).toEqual([
      at(3, "inbound[0].expressions[0]", "must not be empty"),
    ]);
  });

  it("an empty document and empty phases load", () => {
    expect(problems("")).toEqual([]);
    expect(problems(lines("inbound: []", "outbound: []"))).toEqual([]);
  });
});

describe("CEL expressions", () => {
  const entry = (phase: string, ...expressions: string[]) =>
    lines(
      `${phase}:`,
      "  - name: gate",
      "    expressions:",
      ...expressions.map((expression) => `      - ${JSON.stringify(expression)}`),
      "    actions:",
      "      - type: deny",
    );

  it.each([
    ["req.method ==", "invalid CEL: 1:12: found = but expecting end of input"],
    ["request.method == 'GET'", "invalid CEL: unknown variable 'request' (expected req, conn, actions, endpoint, time, vars)"],
    ["res.status_code == 500", "invalid CEL: res is only available in outbound expressions"],
    ["getResHeader('server') == []", "invalid CEL: getResHeader is only available in outbound expressions"],
    ["getHeader('x-api-key') == ['k']", "invalid CEL: unknown function 'getHeader'"],
    ["inCidrRange(conn.client_ip)", "invalid CEL: no overload of function 'inCidrRange' takes 1 argument"],
    ["req.path.startsWith('/admin')", "invalid CEL: unknown field 'path' of req"],
  ])("%s is refused at load: %s", (expression, message) => {
    expect(problems(entry("inbound", "req.method != 'OPTIONS'", expression))).toEqual([at(5, "inbound[0].expressions[1]", message)]);
  });

  it("res and the response macros are fine outbound", () => {
    expect(problems(entry("outbound", "res.status_code >= 500", "hasResHeader('server')"))).toEqual([]);
  });

  it("an unknown variable outbound lists res among the expected ones", () => {
    expect(problems(entry("outbound", "response.status == 500"))).toEqual([
      at(4, "outbound[0].expressions[0]", "invalid CEL: unknown variable 'response' (expected req, conn, actions, res, endpoint, time, vars)"),
    ]);
  });

  it("every bad expression of a file is reported", () => {
    expect(problems(entry("inbound", "nope == 1", "req.method == 'GET'", "foo()"))).toEqual([
      at(4, "inbound[0].expressions[0]", "invalid CEL: unknown variable 'nope' (expected req, conn, actions, endpoint, time, vars)"),
      at(6, "inbound[0].expressions[2]", "invalid CEL: unknown function 'foo'"),
    ]);
  });
});

describe("YAML and JSON files", () => {
  it("a YAML syntax error names its line", () => {
    expect(problems(lines("inbound:", "  - actions:", "      - type: deny", "    name: [unclosed"))).toEqual([
      `${FILE}:5: invalid YAML: Flow sequence in block collection must be sufficiently indented and end with a ]`,
    ]);
  });

  it("a duplicate key is a YAML error at the duplicate", () => {
    expect(problems(lines("inbound: []", "outbound: []", "inbound: []"))).toEqual([`${FILE}:3: invalid YAML: Map keys must be unique`]);
  });

  it("tab indentation is a YAML error at its line", () => {
    expect(problems(lines("inbound:", "\t- actions: []"))).toEqual([`${FILE}:2: invalid YAML: Tabs are not allowed as indentation`]);
  });

  it("two documents in one file are refused", () => {
    expect(problems(lines("inbound: []", "---", "outbound: []"))).toEqual([
      `${FILE}:2: invalid YAML: Source contains multiple documents; please use YAML.parseAllDocuments()`,
    ]);
  });

  it("an alias bomb is refused instead of expanded", () => {
    const bomb = lines(
      "a: &a [x, x, x, x, x, x, x, x, x, x]",
      "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]",
      "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]",
      `inbound: [${Array(200).fill("*c").join(", ")}]`,
    );
    expect(problems(bomb)).toEqual([`${FILE}: invalid YAML: Excessive alias count indicates a resource exhaustion attack`]);
  });

  const json = (rate: string) =>
    lines(
      "{",
      '  "inbound": [',
      "    {",
      '      "actions": [',
      "        {",
      '          "type": "rate-limit",',
      '          "config": {',
      '            "capacity": 100,',
      `            "rate": ${rate}`,
      "          }",
      "        }",
      "      ]",
      "    }",
      "  ]",
      "}",
    );

  it("a JSON policy loads", () => {
    expect(problems(json('"60s"'), "policies/api.json")).toEqual([]);
  });

  it("a JSON policy's problems name their line", () => {
    expect(problems(json('"61s"'), "policies/api.json")).toEqual(["policies/api.json:9: inbound[0].actions[0].config.rate: must be a multiple of 10s"]);
    expect(problems(json("60"), "policies/api.json")).toEqual([
      "policies/api.json:9: inbound[0].actions[0].config.rate: must be a duration string such as 60s, 10m or 1h, got number 60",
    ]);
  });

  it("a JSON syntax error names its line", () => {
    expect(problems(lines("{", '  "inbound": [', '    { "actions": [{ "type": "deny" }] }', "  ,", "}"), "policies/api.json")).toEqual([
      "policies/api.json:5: invalid JSON/YAML: Flow sequence in block collection must be sufficiently indented and end with a ]",
      "policies/api.json:5: invalid JSON/YAML: Flow map must end with a }",
    ]);
  });

  it("a single-line JSON policy puts every problem on line 1", () => {
    const text = JSON.stringify({ inbound: [{ actions: [{ type: "rate-limit", config: { capacity: 0, rate: "60s", extra: true } }] }] });
    expect(problems(text, "policies/api.json")).toEqual([
      "policies/api.json:1: inbound[0].actions[0].config.capacity: must be at least 1",
      "policies/api.json:1: inbound[0].actions[0].config.extra: unknown key",
    ]);
  });
});

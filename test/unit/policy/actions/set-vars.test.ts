/** `set-vars`: variables that later actions and expressions of the phase read as `vars.<name>`, typed and bounded. */

import { describe, expect, it } from "vitest";
import { MAX_SET_VARS_PER_ACTION, MAX_VAR_VALUE_CHARS, MAX_VARS_PER_REQUEST } from "../../../../src/policy/actions/set-vars.ts";
import { runPhase } from "../../../../src/policy/evaluate.ts";
import type { ActionServices } from "../../../../src/policy/exchange.ts";
import { ExpressionErrorLog } from "../../../../src/policy/expression-error-log.ts";
import { makeExchange } from "../../support/exchange.ts";
import { MemoryCounter } from "../../support/memory-counter.ts";
import { lines, load, POLICY_FILE as FILE, problems } from "../../support/policy-text.ts";

const T0 = 1_700_000_000_000;

function services(): ActionServices & { lines: string[] } {
  const written: string[] = [];
  return {
    counter: new MemoryCounter(T0),
    lines: written,
    interpolationErrors: new ExpressionErrorLog({ now: () => T0, write: (line) => written.push(line) }),
  };
}

/** set-vars with `vars` (lines under `vars:`), then a custom-response whose body is `body`. */
const setThenAnswer = (vars: string[], body: string, expression?: string) =>
  lines(
    "on_http_request:",
    "  - actions:",
    "      - type: set-vars",
    "        config:",
    "          vars:",
    ...vars.map((line) => `            ${line}`),
    "  - expressions:",
    `      - "${expression ?? "true"}"`,
    "    actions:",
    "      - type: custom-response",
    `        config: { body: '${body}' }`,
  );

async function answer(text: string, exchange = makeExchange()): Promise<string | undefined> {
  const response = await runPhase(load(text).inbound, exchange, services());
  return response?.text();
}

describe("set-vars", () => {
  it("ngrok's basic example: values keep their types and later expressions and bodies read them", async () => {
    const policy = setThenAnswer(
      [
        "- sample_string: bar",
        "- sample_double: 1.5",
        "- sample_bool: true",
        "- sample_null: null",
        "- sample_list: [1, 2, 3]",
        "- sample_map: { key: value }",
        "- sample_nested_map: { key: [value1, value2] }",
      ],
      "${vars.sample_string} ${vars.sample_double} ${vars.sample_list[0]} ${vars.sample_map.key} ${vars.sample_nested_map.key[1]} ${vars.sample_null}",
      "vars.sample_bool == true && vars.sample_list[2] + 1 == 4",
    );
    expect(await answer(policy)).toBe("bar 1.5 1 value value2 null");
  });

  it("a string that is one ${…} takes its value's type; others are text; later variables read earlier ones", async () => {
    const policy = setThenAnswer(
      [
        "- path_len: '${size(req.url.path)}'",
        "- doubled: '${vars.path_len * 2}'",
        "- label: 'len=${vars.doubled}'",
        "- nested: { ip: '${conn.client_ip}', n: ['${vars.path_len}'] }",
      ],
      "${vars.label} ${vars.nested}",
      "vars.doubled == 8 && vars.nested.n[0] == 4",
    );
    expect(await answer(policy, makeExchange({ url: "https://a.test/abc", clientIp: "192.0.2.1" }))).toBe('len=8 {"ip":"192.0.2.1","n":[4]}');
  });

  it("a ${…} alone that fails leaves its variable unset and is logged; a later expression reading it is skipped", async () => {
    const policy = setThenAnswer(["- token: '${req.headers[\"x-token\"][0]}'"], "has token", "vars.token != ''");
    const run = services();
    expect(await runPhase(load(policy).inbound, makeExchange(), run)).toBeUndefined();
    expect(run.lines).toEqual([
      `traffic policy: \${req.headers["x-token"][0]} in inbound[0].actions[0].config.vars[0].token failed (field not found: x-token); it is written as empty text`,
    ]);
  });

  it(`a value produced beyond ${MAX_VAR_VALUE_CHARS} characters is not set`, async () => {
    const policy = setThenAnswer(["- big: '${req.headers[\"x-big\"]}'", "- small: ok"], "${vars.small} ${has(vars.big)}");
    const run = services();
    const response = await runPhase(load(policy).inbound, makeExchange({ headers: { "x-big": "b".repeat(20_000) } }), run);
    expect(await response?.text()).toBe("ok false");
    expect(run.lines[0]).toContain(
      `vars.big} in inbound[0].actions[0].config.vars[0].big failed (exceeds the limit of ${MAX_VAR_VALUE_CHARS} characters per value; not set)`,
    );
  });

  it(`a request holds at most ${MAX_VARS_PER_REQUEST} variables; the ones past it are not set`, async () => {
    const actions = Array.from({ length: 5 }, (_, action) => [
      "      - type: set-vars",
      "        config:",
      "          vars:",
      ...Array.from({ length: MAX_SET_VARS_PER_ACTION }, (_, i) => `            - v${action}_${i}: ${i}`),
    ]).flat();
    const exchange = makeExchange();
    const run = services();
    await runPhase(load(lines("on_http_request:", "  - actions:", ...actions)).inbound, exchange, run);
    expect(exchange.policyVars?.size).toBe(MAX_VARS_PER_REQUEST);
    expect(exchange.policyVars?.has("v4_0")).toBe(false);
    expect(run.lines[0]).toContain(`exceeds the limit of ${MAX_VARS_PER_REQUEST} variables per request; not set`);
  });

  it("refuses malformed configs with located messages", () => {
    const one = (...vars: string[]) => lines("on_http_request:", "  - actions:", "      - type: set-vars", "        config:", "          vars:", ...vars);
    expect(problems(one("            - { a: 1, b: 2 }"))).toEqual([
      `${FILE}:6: on_http_request[0].actions[0].config.vars[0]: must have exactly 1 key: the variable's name`,
    ]);
    expect(problems(one("            - bad-name: 1"))).toEqual([
      `${FILE}:6: on_http_request[0].actions[0].config.vars[0].bad-name: must be a letter or _ followed by letters, digits or _ (read as vars.<name>)`,
    ]);
    expect(problems(one(`            - ${"n".repeat(65)}: 1`))).toEqual([
      `${FILE}:6: on_http_request[0].actions[0].config.vars[0].${"n".repeat(65)}: must be at most 64 characters`,
    ]);
    expect(problems(one("            - a: '${conn.nope}'"))).toEqual([
      `${FILE}:6: on_http_request[0].actions[0].config.vars[0].a: \${conn.nope}: invalid CEL: unknown field 'nope' of conn`,
    ]);
    expect(problems(one(...Array.from({ length: 17 }, (_, i) => `            - v${i}: 1`)))).toEqual([
      `${FILE}:5: on_http_request[0].actions[0].config.vars: exceeds the limit of ${MAX_SET_VARS_PER_ACTION} variables per action`,
    ]);
    expect(problems(one(`            - big: '${"x".repeat(MAX_VAR_VALUE_CHARS + 1)}'`))).toEqual([
      `${FILE}:6: on_http_request[0].actions[0].config.vars[0].big: exceeds the limit of ${MAX_VAR_VALUE_CHARS} characters per value`,
    ]);
  });
});

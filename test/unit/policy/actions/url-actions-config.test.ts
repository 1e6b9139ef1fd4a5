/** url-rewrite, redirect and basic-auth configs: each mistake a located load error with its exact message. */

import { describe, expect, it } from "vitest";
import { lines, problems } from "../../support/policy-text.ts";

/** One inbound action whose config is `config` (YAML flow map), in a file; its problems. */
const inbound = (type: string, config: string) => problems(lines("on_http_request:", "  - actions:", `      - type: ${type}`, `        config: ${config}`));
const at = "policies/api.yaml:4: on_http_request[0].actions[0]";

describe("url-rewrite and redirect", () => {
  it("run only on requests", () => {
    expect(problems(lines("on_http_response:", "  - actions:", "      - type: url-rewrite", "        config: { to: /x }"))).toEqual([
      "policies/api.yaml:4: on_http_response[0].actions[0].config: runs only on requests (inbound, ngrok's on_http_request), as ngrok's does",
    ]);
  });

  it("a from that is no RE2 pattern, or repeats too much, is refused at from", () => {
    expect(inbound("url-rewrite", '{ from: "(a", to: /x }')).toEqual([
      `${at}.config.from: pattern "(a" is not a valid RE2 expression: error parsing regexp: missing closing ): \`(a\``,
    ]);
    expect(inbound("redirect", '{ from: "(?=x)a", to: /x }')[0]).toMatch(/config\.from: pattern "\(\?=x\)a" is not a valid RE2 expression/);
    expect(inbound("url-rewrite", '{ from: "a{1000}", to: /x }')).toEqual([`${at}.config.from: pattern "a{1000}" repeats 1000 times, over the limit of 100`]);
    expect(inbound("url-rewrite", `{ from: "${"a".repeat(1025)}", to: /x }`)).toEqual([`${at}.config.from: must be at most 1024 characters`]);
  });

  it("an interpolated from is checked with each ${…} standing for a word, and its expressions are checked", () => {
    expect(inbound("url-rewrite", '{ from: "${req.url.authority}(", to: /x }')[0]).toMatch(/config\.from: pattern "x\(" is not a valid RE2 expression/);
    expect(inbound("url-rewrite", '{ from: "${req.nope}", to: /x }')[0]).toMatch(/config\.from: \$\{req\.nope\}: /);
    expect(inbound("url-rewrite", '{ from: "/a", to: "/${req.url.path" }')[0]).toMatch(/config\.to: unterminated \$\{/);
  });

  it("to is required and not empty", () => {
    expect(inbound("url-rewrite", "{ from: /a }")).toEqual([`${at}.config.to: is required`]);
    expect(inbound("redirect", '{ to: "" }')).toEqual([`${at}.config.to: must not be empty`]);
  });

  it("redirect: a 3xx status, at most 10 headers, never location", () => {
    expect(inbound("redirect", "{ to: /x, status_code: 200 }")).toEqual([`${at}.config.status_code: must be a 3xx status`]);
    expect(inbound("redirect", "{ to: /x, headers: { Location: https://evil.example } }")).toEqual([
      `${at}.config.headers.Location: cannot be set: the Location is the URL \`to\` makes`,
    ]);
    const eleven = Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`x-h${i}`, "v"]));
    expect(inbound("redirect", `{ to: /x, headers: ${JSON.stringify(eleven)} }`)).toEqual([`${at}.config.headers: exceeds the limit of 10 headers`]);
  });
});

describe("basic-auth", () => {
  const credentials = (...list: string[]) => inbound("basic-auth", `{ credentials: ${JSON.stringify(list)} }`);

  it("ngrok's bounds: 1 … 10 credentials, passwords of 8 … 128 characters, a user name", () => {
    expect(credentials()).toEqual([`${at}.config.credentials: must have at least 1 credential`]);
    expect(credentials(...Array.from({ length: 11 }, (_, i) => `u${i}:password${i}`))).toEqual([
      `${at}.config.credentials: exceeds the limit of 10 credentials`,
    ]);
    expect(credentials("user:short")).toEqual([`${at}.config.credentials[0]: must have a password of 8 to 128 characters`]);
    expect(credentials(`user:${"p".repeat(129)}`)).toEqual([`${at}.config.credentials[0]: must have a password of 8 to 128 characters`]);
    expect(credentials(":password1")).toEqual([`${at}.config.credentials[0]: must have a user name of 1 to 128 characters`]);
    expect(credentials("nocolon")).toEqual([`${at}.config.credentials[0]: must be username:password`]);
  });

  it("interpolation: on either side of the colon or the whole, never across it (ngrok's rule)", () => {
    expect(credentials("${req.host}:password1", "admin:${req.host}", "${req.host}", "ops-${req.host}:password1")).toEqual([]);
    expect(credentials("${req.host}password")).toEqual([
      `${at}.config.credentials[0]: must be username:password with the colon outside \${…}, or one \${…} that gives username:password`,
    ]);
    expect(credentials("${req.host}:short")).toEqual([`${at}.config.credentials[0]: must have a password of 8 to 128 characters`]);
  });

  it("a realm of printable ASCII without quote or backslash, at most 128 characters", () => {
    const realm = (text: string) => inbound("basic-auth", `{ credentials: ["u:password1"], realm: ${JSON.stringify(text)} }`);
    expect(realm('a"b')).toEqual([`${at}.config.realm: must be printable ASCII without " or \\`]);
    expect(realm("réalm")).toEqual([`${at}.config.realm: must be printable ASCII without " or \\`]);
    expect(realm("r".repeat(129))).toEqual([`${at}.config.realm: must be at most 128 characters`]);
  });
});

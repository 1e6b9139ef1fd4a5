/**
 * url-rewrite, redirect and basic-auth against hostile requests, through the Worker's pipeline in workerd: open
 * redirects a path-like `to` must not make, catastrophic patterns, expansions past the bound, huge credentials.
 */

import { describe, expect, inject, it } from "vitest";
import { send, singleEdge } from "./harness.ts";

const upstream = `http://127.0.0.1:${inject("upstreamPort")}`;

function route(policy: string) {
  return singleEdge(`      - { id: r, match: /, upstream: ${upstream}, traffic_policy: p.yaml }\n`, { "policies/p.yaml": policy });
}

/** The policy, then an entry that answers the action's error code (or `none`) so the test can read it. */
function withErrorShown(action: string, variable: string) {
  return route(`
on_http_request:
  - actions:
${action}
  - expressions: ["actions.svc.${variable}.error.code != ''"]
    actions:
      - type: custom-response
        config: { status_code: 599, body: "\${actions.svc.${variable}.error.code}" }
`);
}

async function answer(routes: ReturnType<typeof route>, url: string, headers: Record<string, string> = {}) {
  const response = await send(routes, new Request(url, { headers: { "cf-connecting-ip": "203.0.113.9", ...headers } }));
  return { status: response.status, location: response.headers.get("location"), text: await response.text() };
}

describe("redirect: no open redirect from a path-like to", () => {
  const routes = withErrorShown(
    `      - type: redirect
        config: { to: "\${req.url.path}/" }`,
    "redirect",
  );

  it("a request for //evil.example would become a redirect to evil.example: nothing is answered, the error says why", async () => {
    expect(await answer(routes, "http://gw.test//evil.example")).toMatchObject({ status: 599, text: "ERR_REDIRECT_OFF_SITE" });
    const backslash = await answer(routes, "http://gw.test/%5Cevil.example");
    expect(backslash.location === null || backslash.location.startsWith("http://gw.test/"), JSON.stringify(backslash)).toBe(true);
  });

  it("an ordinary path redirects on the same host, with an absolute location", async () => {
    expect(await answer(routes, "http://gw.test/docs")).toMatchObject({ status: 302, location: "http://gw.test/docs/" });
  });

  it("a group that would carry the host away: refused the same way", async () => {
    const byGroup = withErrorShown(
      `      - type: redirect
        config: { from: "^https?://[^/]+/go(/.*)$", to: "/$1" }`,
      "redirect",
    );
    expect(await answer(byGroup, "http://gw.test/go/evil.example/x")).toMatchObject({ status: 599, text: "ERR_REDIRECT_OFF_SITE" });
    expect(await answer(byGroup, "http://gw.test/go")).toMatchObject({ status: 200 });
  });

  it("a to that names its host as written goes there: the operator wrote it", async () => {
    const away = route(`
on_http_request:
  - actions:
      - type: redirect
        config: { from: "^https?://[^/]+/old/(.*)$", to: "https://new.example/$1", status_code: 308 }
`);
    expect(await answer(away, "http://gw.test/old/a?b=1")).toMatchObject({ status: 308, location: "https://new.example/a?b=1" });
  });

  it("https:/// is a path on the request's host, even when a group makes it begin with //", async () => {
    const emptyAuthority = route(`
on_http_request:
  - actions:
      - type: redirect
        config: { from: "^https?://[^/]+/q/(.*)$", to: "https:///$1" }
`);
    expect(await answer(emptyAuthority, "http://gw.test/q//evil.example")).toMatchObject({ status: 302, location: "http://gw.test//evil.example" });
    expect(await answer(emptyAuthority, "http://gw.test/q/%5Cevil.example")).toMatchObject({ status: 302, location: "http://gw.test/%5Cevil.example" });
    expect(await answer(emptyAuthority, "http://gw.test/q/docs?x=1")).toMatchObject({ status: 302, location: "http://gw.test/docs?x=1" });
  });

  it("a result that is no http(s) URL is refused", async () => {
    const scheme = withErrorShown(
      `      - type: redirect
        config: { from: "^https?://[^/]+/js/(.*)$", to: "$1" }`,
      "redirect",
    );
    expect(await answer(scheme, "http://gw.test/js/javascript:alert(1)")).toMatchObject({ status: 599, text: "ERR_REDIRECT_SCHEME" });
  });
});

describe("url-rewrite: bounded work and expansion", () => {
  it("(a+)+$ against a path of 3000 a's and a '!': answered, not rewritten", async () => {
    const routes = withErrorShown(
      `      - type: url-rewrite
        config: { from: "(a+)+$", to: "/x" }`,
      "url_rewrite",
    );
    const response = await answer(routes, `http://gw.test/${"a".repeat(3000)}!`);
    expect(response.status).toBe(200);
    expect(JSON.parse(response.text).url).toBe(`/${"a".repeat(3000)}!`);
  });

  it("a replacement that expands past 8192 characters: the URL is left as it was, ERR_REWRITE_TOO_LONG", async () => {
    const routes = withErrorShown(
      `      - type: url-rewrite
        config: { from: "a", to: "${"b".repeat(100)}" }`,
      "url_rewrite",
    );
    expect(await answer(routes, `http://gw.test/${"a".repeat(200)}`)).toMatchObject({ status: 599, text: "ERR_REWRITE_TOO_LONG" });
  });

  it("a search past the request's regex budget is not run: ERR_REWRITE_REGEX_BUDGET", async () => {
    // 8000 characters × about 1000 instructions is more than the 512 Ki units a request may spend.
    const routes = withErrorShown(
      `      - type: url-rewrite
        config: { from: "([a-z]{50}[0-9]{50}){5}z", to: "/x" }`,
      "url_rewrite",
    );
    expect(await answer(routes, `http://gw.test/${"q".repeat(8000)}`)).toMatchObject({ status: 599, text: "ERR_REWRITE_REGEX_BUDGET" });
  });

  it("a URL over 8192 characters is not read: ERR_REWRITE_URL_TOO_LONG", async () => {
    const routes = withErrorShown(
      `      - type: url-rewrite
        config: { to: "/x" }`,
      "url_rewrite",
    );
    expect(await answer(routes, `http://gw.test/${"a".repeat(9000)}`)).toMatchObject({ status: 599, text: "ERR_REWRITE_URL_TOO_LONG" });
  });

  it("interpolated request text is literal: a Host's dots match only dots, and a $1 in the path names no group", async () => {
    const routes = route(`
on_http_request:
  - actions:
      - type: url-rewrite
        config: { from: "^http://\${req.url.authority}/(.*)$", to: "/in/\${req.url.query}/$1" }
`);
    const seen = JSON.parse((await answer(routes, "http://gw.test/p?q=$1$$")).text);
    expect(seen.url).toBe("/in/q=$1$$/p?q=$1$$");
  });
});

describe("basic-auth: hostile credentials", () => {
  const routes = route(`
on_http_request:
  - actions:
      - type: basic-auth
        config: { credentials: ["user:password1"] }
`);

  it("an Authorization of 60 KB is refused unread with 401 ERR_SVC_203 and the challenge", async () => {
    const response = await send(routes, new Request("http://gw.test/", { headers: { authorization: `Basic ${btoa(`user:${"p".repeat(45_000)}`)}` } }));
    expect(response.status).toBe(401);
    expect(response.headers.get("www-authenticate")).toBe('Basic realm="ngrok"');
    expect(await response.json()).toMatchObject({ error_code: "ERR_SVC_203" });
  });

  it("the right credential passes; its prefix, or it with a character added, does not", async () => {
    const status = async (credential: string) =>
      (await send(routes, new Request("http://gw.test/", { headers: { authorization: `Basic ${btoa(credential)}` } }))).status;
    expect(await status("user:password1")).toBe(200);
    expect(await status("user:password")).toBe(401);
    expect(await status("user:password1x")).toBe(401);
  });
});

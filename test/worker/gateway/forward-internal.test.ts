/** forward-internal between the gateway's routes: a route's policy hands the request to a route under a .internal host. */

import { inject } from "vitest";
import { describe, expect, it } from "vitest";
import { MAX_FORWARD_HOPS } from "../../../src/policy/forward-chain.ts";
import { gatewayFrom, send } from "./harness.ts";

const upstream = `http://127.0.0.1:${inject("upstreamPort")}`;

/** Policy entries (YAML, under `on_http_request:`) gated on a path prefix, forwarding to `url`. */
const forwardOn = (prefix: string, url: string, more = "") => `
            - expressions: ["req.url.path.startsWith('${prefix}')"]
              actions:
                - type: forward-internal
                  config: { url: "${url}"${more} }`;

/** An internal edge whose one route forwards everything to `to`. */
const forwarder = (host: string, to: string) => `
  - id: EDGE-${host.replaceAll(".", "-")}
    hostnames: ["${host}"]
    routes:
      - id: only
        match: /
        upstream: echo
        traffic_policy:
          on_http_request:${forwardOn("/", to)}`;

const chain = Array.from({ length: MAX_FORWARD_HOPS + 1 }, (_, hop) => forwarder(`hop${hop}.internal`, `https://hop${hop + 1}.internal`)).join("");

const routes = gatewayFrom({
  "policies/gateway.yaml": `edges:
  - id: EDGE
    hostnames: ["gw.test"]
    routes:
      - id: public
        match: /
        upstream: echo
        traffic_policy:
          on_http_request:
            - expressions: ["req.url.path.startsWith('/api')"]
              actions:
                - type: add-headers
                  config: { headers: { x-from: public } }
                - type: forward-internal
                  config: { url: "https://api.internal" }
${forwardOn("/loop", "https://loop-a.internal")}
${forwardOn("/missing", "https://nothing.internal")}
${forwardOn("/chain", "https://hop0.internal")}
${forwardOn("/short", "https://hop2.internal")}
            - expressions: ["req.url.path.startsWith('/fallback')"]
              actions:
                - type: forward-internal
                  config: { url: "https://nothing.internal", on_error: continue }
                - type: custom-response
                  config: { status_code: 503, body: "we are down" }
          on_http_response:
            - actions:
                - type: add-headers
                  config: { headers: { x-public-outbound: "yes" } }
  - id: EDGE-api
    hostnames: ["api.internal"]
    routes:
      - id: api
        match: /
        upstream: ${upstream}
        traffic_policy:
          on_http_request:
            - actions:
                - type: add-headers
                  config: { headers: { x-via: api } }
            - expressions: ["req.headers['x-deny'].size() > 0"]
              actions:
                - type: deny
                  config: { status_code: 401 }
${forwarder("loop-a.internal", "https://loop-b.internal")}
${forwarder("loop-b.internal", "https://loop-a.internal")}
${chain}
  - id: EDGE-end
    hostnames: ["hop${MAX_FORWARD_HOPS + 1}.internal"]
    routes:
      - id: end
        match: /
        upstream: ${upstream}
`,
});

interface Seen {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string;
}

describe("forward-internal between routes", () => {
  it("runs the target route's policy and upstream with the client's request; the answer passes the forwarding route's outbound policy", async () => {
    const response = await send(
      routes,
      new Request("http://gw.test/api/items?x=1", { method: "POST", headers: { "cf-connecting-ip": "203.0.113.9" }, body: "payload" }),
    );
    expect(response.status).toBe(200);
    expect(response.headers.get("x-upstream")).toBe("yes");
    expect(response.headers.get("x-public-outbound")).toBe("yes");
    const seen = (await response.json()) as Seen;
    expect(seen.method).toBe("POST");
    expect(seen.url).toBe("/api/items?x=1");
    expect(seen.body).toBe("payload");
    // Headers the forwarding policy added arrive, then the target's; the Host is the one the client used (as ngrok).
    expect(seen.headers["x-from"]).toBe("public");
    expect(seen.headers["x-via"]).toBe("api");
    expect(seen.headers["x-forwarded-host"]).toBe("gw.test");
    expect(seen.headers["x-forwarded-for"]).toBe("203.0.113.9");
  });

  it("the target's policy decides: its deny is the answer", async () => {
    const response = await send(routes, new Request("http://gw.test/api/secret", { headers: { "x-deny": "1" } }));
    expect(response.status).toBe(401);
    expect(await response.json()).toMatchObject({ error_code: "ERR_SVC_300" });
  });

  it("a .internal host is not served to clients directly: 404 ERR_SVC_301", async () => {
    const response = await send(routes, new Request("http://api.internal/items"));
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ error_code: "ERR_SVC_301" });
  });

  it("a loop is refused with 508 ERR_SVC_3603", async () => {
    const response = await send(routes, new Request("http://gw.test/loop"));
    expect(response.status).toBe(508);
    expect(await response.json()).toMatchObject({
      error_code: "ERR_SVC_3603",
      msg: "forward-internal to https://loop-a.internal refused: a loop was detected, this request already ran through that target.",
    });
  });

  it(`a chain of ${MAX_FORWARD_HOPS} forwards is served; one more is refused with 508 ERR_SVC_3501`, async () => {
    const short = await send(routes, new Request("http://gw.test/short"));
    expect(short.status).toBe(200);
    expect(((await short.json()) as Seen).url).toBe("/short");

    const long = await send(routes, new Request("http://gw.test/chain"));
    expect(long.status).toBe(508);
    expect(await long.json()).toMatchObject({ error_code: "ERR_SVC_3501", details: { hops: MAX_FORWARD_HOPS } });
  });

  it("halt: a URL that names no route answers 404 ERR_SVC_3200 (not the catch-all edge)", async () => {
    const response = await send(routes, new Request("http://gw.test/missing"));
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({
      error_code: "ERR_SVC_3200",
      msg: "forward-internal found no target at https://nothing.internal: nothing of this owner is served there, or it is offline.",
    });
  });

  it("on_error: continue falls through to the next action", async () => {
    const response = await send(routes, new Request("http://gw.test/fallback"));
    expect(response.status).toBe(503);
    expect(await response.text()).toBe("we are down");
  });
});

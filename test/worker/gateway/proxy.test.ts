import { inject } from "vitest";
import { describe, expect, it } from "vitest";
import { send, singleEdge } from "./harness.ts";

const upstream = `http://127.0.0.1:${inject("upstreamPort")}`;
const routes = singleEdge(`
      - id: origin
        match: /app
        upstream: ${upstream}/base
      - id: root
        match: /
        upstream: echo
`);

describe("origin upstream", () => {
  it("passes method, path, query, headers and body through, and the response back", async () => {
    const response = await send(
      routes,
      new Request("http://gw.test/app/items?x=1&y=two", {
        method: "PUT",
        headers: { "content-type": "text/plain", "x-custom": "kept", "cf-connecting-ip": "203.0.113.9" },
        body: "hello upstream",
      }),
    );
    expect(response.status).toBe(200);
    expect(response.headers.get("x-upstream")).toBe("yes");
    const seen = (await response.json()) as { method: string; url: string; headers: Record<string, string>; body: string };
    expect(seen.method).toBe("PUT");
    expect(seen.url).toBe("/base/app/items?x=1&y=two");
    expect(seen.headers["x-custom"]).toBe("kept");
    expect(seen.headers["x-forwarded-for"]).toBe("203.0.113.9");
    expect(seen.headers["x-forwarded-host"]).toBe("gw.test");
    expect(seen.body).toBe("hello upstream");
  });

  it("keeps the upstream's status", async () => {
    const response = await send(routes, new Request("http://gw.test/app/status/418"));
    expect(response.status).toBe(418);
    await response.body?.cancel();
  });

  it("streams a 10 MiB body each way intact", async () => {
    const size = 10 * 1024 * 1024;
    const download = await send(routes, new Request(`http://gw.test/app/bytes/${size}`));
    expect((await download.arrayBuffer()).byteLength).toBe(size);

    const payload = new Uint8Array(size).fill(0x62);
    const upload = await send(routes, new Request("http://gw.test/app/echo", { method: "POST", body: payload }));
    expect(((await upload.json()) as { bodyLength: number }).bodyLength).toBe(size);
  });

  it("answers 502 in the error envelope when the origin cannot be reached", async () => {
    const dead = singleEdge(`
      - id: dead
        match: /
        upstream: http://127.0.0.1:9
`);
    const response = await send(dead, new Request("http://gw.test/x"));
    expect(response.status).toBe(502);
    const body = (await response.json()) as { error_code: string; msg: string; details: { operation_id: string } };
    expect(body.error_code).toBe("ERR_SVC_302");
    expect(body.msg).toContain("http://127.0.0.1:9");
    expect(body.details.operation_id).toMatch(/^op_[0-9A-Za-z]{27}$/);
    expect(response.headers.get("x-operation-id")).toBe(body.details.operation_id);
  });

  it("answers 504 when the origin does not answer within UPSTREAM_TIMEOUT_MS", async () => {
    const response = await send(routes, new Request("http://gw.test/app/delay/1500"), { UPSTREAM_TIMEOUT_MS: "100" });
    expect(response.status).toBe(504);
    expect(await response.json()).toMatchObject({ error_code: "ERR_SVC_304", msg: `The upstream ${upstream} did not answer within 100ms.` });
  });
});

describe("route table", () => {
  it("an unknown host or path gets 404 naming both", async () => {
    const response = await send(routes, new Request("http://other.test/anything"));
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({
      error_code: "ERR_SVC_301",
      status_code: 404,
      msg: "No route of this gateway serves host 'other.test' and path '/anything'.",
    });
  });

  it("the longest matching prefix wins", async () => {
    const response = await send(routes, new Request("http://gw.test/application"));
    expect(((await response.json()) as { url: string }).url).toBe("http://gw.test/application");
  });
});

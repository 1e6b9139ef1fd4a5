/**
 * Relay fidelity inside workerd: the request head the agent gets, with `request.cf` as Cloudflare and
 * Miniflare fill it in. Response framing (Content-Length, encodings, HEAD, 204/304) needs a real HTTP client
 * to see — workerd's own fetch does not show a fixed-length stream's Content-Length — so it is tested end to
 * end under `wrangler dev` in test/e2e/tunnel-fidelity.e2e.test.ts.
 */

import { afterEach, describe, expect, it } from "vitest";
import { connectAgent, publicFetch, type FakeAgent } from "./fake-agent.ts";

const agents: FakeAgent[] = [];

afterEach(() => {
  for (const agent of agents.splice(0)) if (!agent.closed) agent.close();
});

async function tunnel() {
  const { agent } = await connectAgent();
  agents.push(agent);
  return { agent, tunnel: await agent.startOk() };
}

describe("the request head the agent gets", () => {
  it("carries the client's Accept-Encoding where the platform replaced it, and none where the client sent none", async () => {
    const { agent, tunnel: started } = await tunnel();
    const cases: Array<[RequestInit, string | undefined]> = [
      // what Cloudflare and Miniflare hand the Worker: the header rewritten, the client's value in cf
      [{ headers: { "accept-encoding": "br, gzip" }, cf: { clientAcceptEncoding: "" } }, undefined],
      [{ headers: { "accept-encoding": "br, gzip" }, cf: { clientAcceptEncoding: "deflate;q=0.5, zstd" } }, "deflate;q=0.5, zstd"],
      // nothing rewritten: the header is the client's own
      [{ headers: { "accept-encoding": "gzip" } }, "gzip"],
      // a client cannot pose as the platform with the edge's own marker
      [{ headers: { "accept-encoding": "gzip", "x-tollgate-client-accept-encoding": "" } }, "gzip"],
    ];
    for (const [init, expected] of cases) {
      const pending = publicFetch(started.public_url!, "/", init);
      const head = await agent.next("request_head");
      expect(head.headers.filter(([name]) => name === "accept-encoding").map(([, value]) => value)).toEqual(expected === undefined ? [] : [expected]);
      expect(head.headers.map(([name]) => name)).not.toContain("x-tollgate-client-accept-encoding");
      agent.sendBatch([
        { type: "response_head", stream: head.stream, status: 204, headers: [] },
        { type: "end", stream: head.stream, count: 0 },
      ]);
      expect((await pending).status).toBe(204);
    }
  });
});

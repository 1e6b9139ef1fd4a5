/**
 * The edge's side of issue 41: a request head past the relay's bounds is answered at the edge and never
 * reaches the agent, and a frame of the agent's that the edge cannot decode fails its stream, not the session.
 */

import { afterEach, describe, expect, it } from "vitest";
import {
  EDGE_DECISIONS_VERSION,
  LARGE_DATA_CHUNK,
  MAX_DECISION_TARGET,
  MAX_HEADER_FIELDS,
  MAX_HEADER_VALUE_CHARS,
  MAX_TARGET_CHARS,
  type FrameOf,
} from "../../../src/relay/index.ts";
import { responseFrames } from "../../shared/frames.ts";
import { connectAgent, publicFetch, type FakeAgent } from "./fake-agent.ts";

const agents: FakeAgent[] = [];

afterEach(() => {
  for (const agent of agents.splice(0)) if (!agent.closed) agent.close();
});

async function agentWithTunnels(n: number, hello: Partial<FrameOf<"hello">> = {}) {
  const { agent } = await connectAgent(undefined, hello);
  agents.push(agent);
  const tunnels = [];
  for (let i = 0; i < n; i++) tunnels.push(await agent.startOk({ name: `web${i}` }));
  return { agent, tunnels };
}

/** Answers the next request head of the agent with 200 and `body`. */
async function answerNext(agent: FakeAgent, body: string): Promise<FrameOf<"request_head">> {
  const head = await agent.next("request_head");
  for (const frame of responseFrames(head.stream, 200, body, [["content-type", "text/plain"]])) agent.send(frame);
  return head;
}

describe("a request head past the relay's bounds", () => {
  it("is answered 431 ERR_SVC_3210 at the edge, the agent never sees it, and the tunnel keeps serving", async () => {
    const { agent, tunnels } = await agentWithTunnels(1);
    const response = await publicFetch(tunnels[0].public_url!, "/", { headers: { "x-big": "v".repeat(MAX_HEADER_VALUE_CHARS + 1) } });
    expect(response.status).toBe(431);
    expect(await response.json()).toMatchObject({
      error_code: "ERR_SVC_3210",
      status_code: 431,
      details: { reason: `header "x-big" has a value of ${MAX_HEADER_VALUE_CHARS + 1} characters, more than ${MAX_HEADER_VALUE_CHARS}` },
    });
    const served = publicFetch(tunnels[0].public_url!, "/next");
    // the first head the agent gets is the next request's
    expect((await answerNext(agent, "ok")).target).toBe("/next");
    expect(await (await served).text()).toBe("ok");
    expect(agent.closed).toBeUndefined();
  });

  it("is told to an agent that asked for edge decisions, cut to a decision's bounds", async () => {
    const { agent, tunnels } = await agentWithTunnels(1, { edge_decisions: EDGE_DECISIONS_VERSION });
    const target = `/${"t".repeat(MAX_TARGET_CHARS)}`;
    const response = await publicFetch(tunnels[0].public_url!, target, {
      headers: { "cf-connecting-ip": "198.51.100.31", "x-big": "v".repeat(MAX_HEADER_VALUE_CHARS + 1) },
    });
    expect(response.status).toBe(414);
    const decision = await agent.next("edge_decision");
    expect(decision).toMatchObject({
      tunnel_id: tunnels[0].id,
      method: "GET",
      client_addr: "198.51.100.31",
      status: 414,
      answered_by: { phase: "inbound", type: "relay-bounds" },
      rate_limits: [],
    });
    expect(decision.target).toHaveLength(MAX_DECISION_TARGET + 1);
    expect(decision.headers.find(([name]) => name === "x-big")?.[1].length).toBeLessThan(MAX_HEADER_VALUE_CHARS);
    expect(agent.closed).toBeUndefined();
  });

  it("counts the Host the edge adds: the client's 512 other fields are one too many", async () => {
    const { tunnels } = await agentWithTunnels(1);
    const headers = Object.fromEntries(Array.from({ length: MAX_HEADER_FIELDS }, (_, i) => [`x-f${i}`, "v"]));
    const response = await publicFetch(tunnels[0].public_url!, "/", { headers });
    expect(response.status).toBe(431);
    expect(((await response.json()) as { details: { reason: string } }).details.reason).toMatch(/^it has \d+ header fields, more than 512$/);
  });

  it("a target past the bound is answered 414, to a browser as the error page", async () => {
    const { tunnels } = await agentWithTunnels(1);
    const response = await publicFetch(tunnels[0].public_url!, `/${"t".repeat(MAX_TARGET_CHARS)}`, { headers: { accept: "text/html" } });
    expect(response.status).toBe(414);
    expect(response.headers.get("content-type")).toContain("text/html");
    const page = await response.text();
    expect(page).toContain("The address is too long for this tunnel");
    expect(page).toContain("ERR_SVC_3210");
  });
});

describe("a frame of the agent's that the edge cannot decode", () => {
  it("fails its stream with 502 and a reset to the agent; the session and its other tunnel go on", async () => {
    const { agent, tunnels } = await agentWithTunnels(2);
    const pending = publicFetch(tunnels[0].public_url!, "/");
    const head = await agent.next("request_head");
    const tooMany = Array.from({ length: MAX_HEADER_FIELDS + 1 }, (_, i): [string, string] => [`x-${i}`, "v"]);
    agent.send({ type: "response_head", stream: head.stream, status: 200, headers: tooMany });
    const response = await pending;
    expect(response.status).toBe(502);
    expect(await response.json()).toMatchObject({ error_code: "ERR_SVC_3004", details: { reason: "protocol_error" } });
    expect(await agent.next("reset", (frame) => frame.stream === head.stream)).toMatchObject({
      code: "protocol_error",
      message: "the edge could not decode a response_head frame: response_head frame: headers: Too big: expected array to have <=512 items",
    });
    const other = publicFetch(tunnels[1].public_url!, "/other");
    await answerNext(agent, "still here");
    expect(await (await other).text()).toBe("still here");
    expect(agent.closed).toBeUndefined();
  });

  it("a data frame past the LARGE_DATA_CHUNK its welcome announced resets that stream only", async () => {
    const { agent, tunnels } = await agentWithTunnels(1);
    const pending = publicFetch(tunnels[0].public_url!, "/too-large");
    const head = await agent.next("request_head");
    agent.send({ type: "response_head", stream: head.stream, status: 200, headers: [] });
    agent.send({ type: "data", stream: head.stream, seq: 0, bytes: new Uint8Array(LARGE_DATA_CHUNK + 1) });
    expect(await agent.next("reset", (frame) => frame.stream === head.stream)).toMatchObject({
      code: "protocol_error",
      message: `the edge could not decode a data frame: data frame of ${LARGE_DATA_CHUNK + 1} bytes exceeds ${LARGE_DATA_CHUNK}`,
    });
    // The head was answered before the body broke: the client's body ends early, none of the frame's bytes in it.
    // Usually it fails; when the reset lands before workerd began sending the body, workerd ends it empty instead
    // (seen once in CI): the client cannot tell that from an empty body, which issue 41's note leaves open.
    const body = await (await pending).arrayBuffer().catch(() => undefined);
    expect(body === undefined || body.byteLength === 0, `a body of ${body?.byteLength} bytes came through`).toBe(true);
    const next = publicFetch(tunnels[0].public_url!, "/next");
    await answerNext(agent, "next");
    expect(await (await next).text()).toBe("next");
    expect(agent.closed).toBeUndefined();
  });
});

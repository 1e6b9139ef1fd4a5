import { describe, expect, it } from "vitest";
import { EDGE_DECISIONS_PER_SECOND, type EdgeDecision, type Frame } from "../../../src/relay/index.ts";
import { DecisionSampler, MAX_SAMPLED_KEYS } from "../../../src/tunnels/decision-sampler.ts";
import { SessionDecisions } from "../../../src/tunnels/session-decisions.ts";
import type { SessionStore } from "../../../src/tunnels/session-store.ts";

const decision: EdgeDecision = {
  tunnel_id: "tn_1",
  at: 1_000,
  method: "GET",
  target: "/",
  headers: [],
  client_addr: "203.0.113.5",
  status: 429,
  answered_by: { phase: "inbound", entry: 0, action: 0, type: "rate-limit" },
  rate_limits: [{ name: "t", bucket_key: "203.0.113.5", limited: true, outcome: "limited", retry_after: 7, remaining: 0, capacity: 1, window_s: 60 }],
  suppressed: 0,
};

/** The session's store as SessionDecisions reads it: the hello's answer and the tunnels it serves. */
function storeOf(edgeDecisions: number | undefined): SessionStore {
  return {
    meta: () => ({ agentEdgeDecisions: edgeDecisions }),
    tunnel: (id: string) => (id === "tn_1" ? { id, name: "web" } : undefined),
  } as unknown as SessionStore;
}

function post(body: unknown): Request {
  return new Request("https://tunnel-session/decision", { method: "POST", body: typeof body === "string" ? body : JSON.stringify(body) });
}

describe("the bound on edge decisions", () => {
  it(`a flood of 10,000 limited requests in one second makes ${EDGE_DECISIONS_PER_SECOND} frames; the next carries the 9,980 others`, async () => {
    let now = 5_000;
    const decisions = new SessionDecisions(() => now);
    const frames: Frame[] = [];
    const store = storeOf(1);
    for (let i = 0; i < 10_000; i++) expect((await decisions.receive(post(decision), store, (frame) => frames.push(frame))).status).toBe(204);
    expect(frames).toHaveLength(EDGE_DECISIONS_PER_SECOND);
    now += 1_000;
    await decisions.receive(post(decision), store, (frame) => frames.push(frame));
    expect(frames).toHaveLength(EDGE_DECISIONS_PER_SECOND + 1);
    expect(frames.at(-1)).toMatchObject({ type: "edge_decision", status: 429, suppressed: 10_000 - EDGE_DECISIONS_PER_SECOND });
  });

  it("adds what the Worker's sampler counted to what the session counted", async () => {
    const decisions = new SessionDecisions(() => 0);
    const frames: Frame[] = [];
    await decisions.receive(post({ ...decision, suppressed: 41 }), storeOf(1), (frame) => frames.push(frame));
    expect(frames).toMatchObject([{ suppressed: 41 }]);
  });

  it("sends nothing to an agent whose hello did not ask, nor about a tunnel the session does not serve", async () => {
    const decisions = new SessionDecisions(() => 0);
    const frames: Frame[] = [];
    await decisions.receive(post(decision), storeOf(undefined), (frame) => frames.push(frame));
    await decisions.receive(post({ ...decision, tunnel_id: "tn_other" }), storeOf(1), (frame) => frames.push(frame));
    expect(frames).toEqual([]);
  });

  it("refuses a report that is not a bounded decision: too large, not JSON, a field over its bound", async () => {
    const decisions = new SessionDecisions(() => 0);
    const sent: Frame[] = [];
    const send = (frame: Frame) => sent.push(frame);
    expect((await decisions.receive(post("x".repeat(200 * 1024)), storeOf(1), send)).status).toBe(413);
    expect((await decisions.receive(post("{"), storeOf(1), send)).status).toBe(400);
    const tooMany = { ...decision, rate_limits: Array.from({ length: 9 }, () => decision.rate_limits[0]) };
    expect((await decisions.receive(post(tooMany), storeOf(1), send)).status).toBe(400);
    expect((await decisions.receive(post({ ...decision, target: "/".repeat(5000) }), storeOf(1), send)).status).toBe(400);
    expect(sent).toEqual([]);
  });

  it("a sampler remembers at most MAX_SAMPLED_KEYS tunnels however many it is offered", () => {
    const sampler = new DecisionSampler(EDGE_DECISIONS_PER_SECOND, () => 0);
    for (let i = 0; i < 10_000; i++) sampler.offer(`tn_${i}`);
    // Full, it forgets its oldest eighth at once (src/bounded-map.ts).
    expect(sampler.size).toBeLessThanOrEqual(MAX_SAMPLED_KEYS);
    expect(sampler.size).toBeGreaterThan(MAX_SAMPLED_KEYS - MAX_SAMPLED_KEYS / 8);
  });
});

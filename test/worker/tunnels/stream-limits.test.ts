import { afterEach, describe, expect, it } from "vitest";
import { INITIAL_STREAM_WINDOW, ResetCode, type FrameOf } from "../../../src/relay/index.ts";
import { MAX_SESSION_STREAMS } from "../../../src/tunnels/stream-limits.ts";
import { responseFrames } from "../../shared/frames.ts";
import { type FakeAgent, keptAliveTunnels, publicFetch } from "./fake-agent.ts";

/** Ceiling for a hundred requests to reach the agent on a busy machine (not a speed requirement). */
const HEADS_WITHIN_MS = 25_000;

const tunnels = keptAliveTunnels();
afterEach(() => tunnels.closeAll());
const tunnel = () => tunnels.start();

function answer(agent: FakeAgent, head: FrameOf<"request_head">, body: string): void {
  agent.sendBatch(responseFrames(head.stream, 200, body, [["content-type", "text/plain"]]));
}

async function envelope(response: Response) {
  return { status: response.status, retryAfter: response.headers.get("retry-after"), body: (await response.json()) as Record<string, unknown> };
}

/** Opens `count` public requests the agent holds unanswered, and returns them with their heads. */
async function heldRequests(agent: FakeAgent, publicUrl: string, count: number) {
  const pending = Array.from({ length: count }, (_, i) => publicFetch(publicUrl, `/held/${i}`));
  const heads: Array<FrameOf<"request_head">> = [];
  for (let i = 0; i < count; i++) heads.push(await agent.next("request_head", () => true, HEADS_WITHIN_MS));
  return { pending, heads };
}

describe("streams per session", { timeout: 60_000 }, () => {
  it(`carry ${MAX_SESSION_STREAMS} requests at once; one more is answered 503 with retry-after, the agent is not asked, the others carry on`, async () => {
    const { agent, tunnel: started } = await tunnel();
    const host = new URL(started.public_url!).host;
    const { pending, heads } = await heldRequests(agent, started.public_url!, MAX_SESSION_STREAMS);

    const refused = await envelope(await publicFetch(started.public_url!, "/one-too-many"));
    expect(refused).toMatchObject({
      status: 503,
      retryAfter: "1",
      body: {
        error_code: "ERR_SVC_716",
        status_code: 503,
        msg: `Tunnel ${host} is busy: its agent's session is carrying ${MAX_SESSION_STREAMS} requests at once, the most it takes. Try again in a moment.`,
        details: { host, reason: "too_many_streams", limit: MAX_SESSION_STREAMS },
      },
    });

    for (const head of heads) answer(agent, head, `answer ${head.target}`);
    const bodies = await Promise.all(pending.map(async (response) => (await response).text()));
    expect(bodies).toEqual(pending.map((_, i) => `answer /held/${i}`));

    // with the streams done, the session takes requests again; the refused one never reached the agent (its head
    // would have come before this one's)
    const again = publicFetch(started.public_url!, "/again");
    const head = await agent.next("request_head");
    expect(head.target).toBe("/again");
    answer(agent, head, "again");
    expect(await (await again).text()).toBe("again");
  });

  it("free a place as soon as a stream ends: the next request goes to the agent", async () => {
    const { agent, tunnel: started } = await tunnel();
    const { pending, heads } = await heldRequests(agent, started.public_url!, MAX_SESSION_STREAMS);
    expect((await publicFetch(started.public_url!, "/full")).status).toBe(503);
    // the agent gives up on one stream: its place is free
    const first = heads.find((head) => head.target === "/held/0")!;
    agent.send({ type: "reset", stream: first.stream, code: ResetCode.upstreamError, message: "gone" });
    expect((await pending[0]).status).toBe(502);
    const next = publicFetch(started.public_url!, "/next");
    answer(agent, await agent.next("request_head"), "next");
    expect(await (await next).text()).toBe("next");
    for (const head of heads) if (head !== first) answer(agent, head, "done");
    await Promise.all(pending.slice(1).map(async (response) => (await response).text()));
  });

  it("count a stream until its client has taken the body, not only until the agent's end: its bytes are still held", async () => {
    const { agent, tunnel: started } = await tunnel();
    const { pending, heads } = await heldRequests(agent, started.public_url!, MAX_SESSION_STREAMS);
    // one stream's whole body (a window's worth, in two messages) and its end reach the edge; its client reads nothing yet
    const first = heads.find((head) => head.target === "/held/0")!;
    const chunk = new Uint8Array(INITIAL_STREAM_WINDOW / 2).fill(7);
    agent.sendBatch([
      { type: "response_head", stream: first.stream, status: 200, headers: [["content-type", "application/octet-stream"]] },
      { type: "data", stream: first.stream, seq: 0, bytes: chunk },
    ]);
    agent.sendBatch([
      { type: "data", stream: first.stream, seq: 1, bytes: chunk },
      { type: "end", stream: first.stream, count: 2 },
    ]);
    const response = await pending[0];
    expect(response.status).toBe(200);
    // While the client has read nothing the place is held, unless the runtime has already pulled the bytes
    // into its own buffers toward the client (a busy machine gives it time to): then they left the edge, the
    // place is free, and the request reaches the agent, which answers it.
    const whileUnread = publicFetch(started.public_url!, "/while-unread");
    const probeHead = agent.next("request_head");
    const probe = await Promise.race([probeHead.then(() => "agent" as const), whileUnread.then((answer) => answer.status)]);
    if (probe === "agent") {
      answer(agent, await probeHead, "taken");
      expect(await (await whileUnread).text()).toBe("taken");
    } else expect(probe).toBe(503);
    // once the client took it all, the place is free: the edge frees it after the last bytes left, which on a busy
    // machine may be a moment after the client has them, so a request sent in that moment may still get the 503
    expect((await response.arrayBuffer()).byteLength).toBe(INITIAL_STREAM_WINDOW);
    // after a 503 the probe's wait for a head is still pending: it is the one that sees /after-read
    const headArrives = probe === "agent" ? agent.next("request_head") : probeHead;
    let next = publicFetch(started.public_url!, "/after-read");
    for (let attempt = 1; ; attempt++) {
      const first = await Promise.race([headArrives.then(() => "agent" as const), next.then((answer) => answer.status)]);
      if (first === "agent") break;
      expect(first).toBe(503);
      expect(attempt).toBeLessThan(100);
      await new Promise((resolve) => setTimeout(resolve, 20));
      next = publicFetch(started.public_url!, "/after-read");
    }
    const head = await headArrives;
    expect(head.target).toBe("/after-read");
    answer(agent, head, "after");
    expect(await (await next).text()).toBe("after");
    for (const each of heads) if (each !== first) answer(agent, each, "done");
    await Promise.all(pending.slice(1).map(async (each) => (await each).text()));
  });

  it("free the place of a response without a body whose end came in a later message", async () => {
    const { agent, tunnel: started } = await tunnel();
    const { pending, heads } = await heldRequests(agent, started.public_url!, MAX_SESSION_STREAMS - 1);
    const headRequest = publicFetch(started.public_url!, "/head-only", { method: "HEAD" });
    const head = await agent.next("request_head", (each) => each.target === "/head-only");
    agent.send({ type: "response_head", stream: head.stream, status: 200, headers: [["content-length", "5"]] });
    expect((await headRequest).status).toBe(200);
    agent.send({ type: "end", stream: head.stream, count: 0 });
    // the last place is free again
    const last = publicFetch(started.public_url!, "/last");
    const lastHead = await agent.next("request_head", (each) => each.target === "/last");
    answer(agent, lastHead, "last");
    expect(await (await last).text()).toBe("last");
    for (const each of heads) answer(agent, each, "done");
    await Promise.all(pending.map(async (each) => (await each).text()));
  });

  it("answer the agent's own refusal (too_many_streams) with the same 503", async () => {
    const { agent, tunnel: started } = await tunnel();
    const host = new URL(started.public_url!).host;
    const pending = publicFetch(started.public_url!, "/agent-full");
    const head = await agent.next("request_head");
    agent.send({ type: "reset", stream: head.stream, code: ResetCode.tooManyStreams, message: "the agent is serving 256 streams at once, the most it takes" });
    expect(await envelope(await pending)).toMatchObject({
      status: 503,
      retryAfter: "1",
      body: {
        error_code: "ERR_SVC_716",
        msg: `Tunnel ${host} is busy: the agent is serving 256 streams at once, the most it takes. Try again in a moment.`,
        details: { host, reason: "too_many_streams" },
      },
    });
  });
});

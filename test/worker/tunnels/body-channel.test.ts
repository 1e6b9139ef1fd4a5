import { env, SELF } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import { routeBodyChannel } from "../../../src/tunnels/body-channel.ts";
import { AGENT_BODY_PATH, BODY_CHANNEL_MAX_BYTES, BODY_CHANNEL_MIN_BYTES, type FrameOf } from "../../../src/relay/index.ts";
import { firstDifference } from "../../shared/first-difference.ts";
import { connectAgent, publicFetch, type FakeAgent } from "./fake-agent.ts";

const agents: FakeAgent[] = [];

afterEach(() => {
  for (const agent of agents.splice(0)) if (!agent.closed) agent.close();
});

async function tunnelWithChannel() {
  const { agent, welcome } = await connectAgent();
  agents.push(agent);
  const tunnel = await agent.startOk();
  if (!welcome.body_channel) throw new Error("the welcome offered no body channel");
  return { agent, tunnel, channel: welcome.body_channel };
}

function postBody(
  channel: { object: string; token: string },
  stream: number | string,
  body: BodyInit | null,
  init: { token?: string | null; method?: string; object?: string; length?: number } = {},
): Promise<Response> {
  const headers = new Headers({ "content-type": "application/octet-stream" });
  const token = init.token === undefined ? channel.token : init.token;
  if (token !== null) headers.set("authorization", `Bearer ${token}`);
  if (init.length !== undefined) headers.set("content-length", String(init.length));
  return SELF.fetch(`http://127.0.0.1:8787${AGENT_BODY_PATH}?object=${init.object ?? channel.object}&stream=${stream}`, {
    method: init.method ?? "POST",
    headers,
    body,
  });
}

function bytesOf(length: number, seed = 7): Uint8Array {
  return new Uint8Array(length).map((_, i) => (i * seed) % 251);
}

function channelHead(head: FrameOf<"request_head">, length: number): FrameOf<"response_head"> {
  return {
    type: "response_head",
    stream: head.stream,
    status: 200,
    headers: [
      ["content-type", "application/octet-stream"],
      ["content-length", String(length)],
    ],
    body_channel: true,
  };
}

/** A request body that hands over `first`, then waits until `release` before the rest (or an error). */
function heldStream(first: Uint8Array) {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
      c.enqueue(first);
    },
  });
  return { stream, controller };
}

/**
 * A request body of `length` bytes that hands over its next 10,000 only when the reader asks for them, as the
 * agent's POST sends its local service's body: it keeps coming until the edge stops taking it.
 */
function onDemandBody(length: number) {
  let sent = 0;
  return new ReadableStream<Uint8Array>(
    {
      pull(c) {
        const size = Math.min(10_000, length - sent);
        c.enqueue(bytesOf(size));
        sent += size;
        if (sent === length) c.close();
      },
    },
    { highWaterMark: 0 },
  );
}

/** A public request whose head announced a channel of `length` bytes, and its POST, which has sent `first` and holds the rest. */
async function channelInFlight(path: string, length: number, first: Uint8Array) {
  const { agent, tunnel, channel } = await tunnelWithChannel();
  const pending = publicFetch(tunnel.public_url!, path);
  const head = await agent.next("request_head");
  agent.send(channelHead(head, length));
  const held = heldStream(first);
  const posted = postBody(channel, head.stream, held.stream, { length });
  const reader = (await pending).body!.getReader();
  return { agent, channel, head, held, posted, reader };
}

async function errorOf(response: Response): Promise<{ status: number; msg: string; error_code: string }> {
  const body = (await response.json()) as { msg: string; error_code: string };
  return { status: response.status, msg: body.msg, error_code: body.error_code };
}

describe("body channels", () => {
  it("are offered in welcome: the session object's id and a 43-character token", async () => {
    const { agent, welcome } = await connectAgent();
    agents.push(agent);
    expect(welcome.body_channel?.object).toMatch(/^[0-9a-f]{64}$/);
    expect(welcome.body_channel?.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(welcome.body_channel?.max_bytes).toBe(BODY_CHANNEL_MAX_BYTES);
    const other = await connectAgent();
    agents.push(other.agent);
    expect(other.welcome.body_channel?.token).not.toBe(welcome.body_channel?.token);
  });

  it("carry an announced response body to the public client, whole; the POST is answered 204", async () => {
    const { agent, tunnel, channel } = await tunnelWithChannel();
    const pending = publicFetch(tunnel.public_url!, "/big");
    const head = await agent.next("request_head");
    const body = bytesOf(300_000);
    agent.send(channelHead(head, body.byteLength));
    const posted = postBody(channel, head.stream, body);
    const response = await pending;
    expect(response.status).toBe(200);
    expect(firstDifference(new Uint8Array(await response.arrayBuffer()), body)).toBe(-1);
    expect((await posted).status).toBe(204);
    // The stream is over: the same POST again finds nothing.
    expect(await errorOf(await postBody(channel, head.stream, "x"))).toMatchObject({ status: 404, msg: expect.stringContaining("is not open") });
  });

  it("work when the POST arrives before the head's message", async () => {
    const { agent, tunnel, channel } = await tunnelWithChannel();
    const pending = publicFetch(tunnel.public_url!, "/early");
    const head = await agent.next("request_head");
    const body = bytesOf(70_000, 11);
    const posted = postBody(channel, head.stream, body);
    // the POST waits at the object: no answer before the head is sent
    const early = await Promise.race([posted.then(() => "answered"), new Promise((resolve) => setTimeout(() => resolve("waiting"), 200))]);
    expect(early).toBe("waiting");
    agent.send(channelHead(head, body.byteLength));
    expect(firstDifference(new Uint8Array(await (await pending).arrayBuffer()), body)).toBe(-1);
    expect((await posted).status).toBe(204);
  });

  it("refuse a POST that does not name a stream announced with a channel, or comes twice", async () => {
    const { agent, tunnel, channel } = await tunnelWithChannel();
    expect(await errorOf(await postBody(channel, 4242, "x"))).toMatchObject({ status: 404, msg: expect.stringContaining("stream 4242 is not open") });

    const plain = publicFetch(tunnel.public_url!, "/plain");
    const plainHead = await agent.next("request_head");
    agent.send({ type: "response_head", stream: plainHead.stream, status: 200, headers: [] });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await errorOf(await postBody(channel, plainHead.stream, "x"))).toMatchObject({
      status: 409,
      msg: expect.stringContaining("not announced with a body channel"),
    });
    agent.send({ type: "end", stream: plainHead.stream, count: 0 });
    expect((await plain).status).toBe(200);

    const pending = publicFetch(tunnel.public_url!, "/twice");
    const head = await agent.next("request_head");
    const body = bytesOf(1000);
    agent.send(channelHead(head, body.byteLength));
    const held = heldStream(body.subarray(0, 10));
    const first = postBody(channel, head.stream, held.stream, { length: body.byteLength });
    const reader = (await pending).body!.getReader();
    // the first POST's bytes reached the client: it holds the channel
    const firstBytes = await reader.read();
    expect(firstBytes.value).toEqual(body.subarray(0, 10));
    expect(await errorOf(await postBody(channel, head.stream, body))).toMatchObject({
      status: 409,
      msg: expect.stringContaining("already has its body channel"),
    });
    held.controller.enqueue(body.subarray(10));
    held.controller.close();
    const rest = new Uint8Array(
      await new Response(
        new ReadableStream({
          pull: async (c) => {
            const { done, value } = await reader.read();
            if (done) c.close();
            else c.enqueue(value);
          },
        }),
      ).arrayBuffer(),
    );
    expect(rest).toEqual(body.subarray(10));
    expect((await first).status).toBe(204);
  });

  it("refuse POSTs without the session's token, of the wrong shape, or for an object that is not a session", async () => {
    const { channel } = await tunnelWithChannel();
    const other = await connectAgent();
    agents.push(other.agent);
    const wrongToken = await postBody(channel, 1, "x", { token: other.welcome.body_channel!.token });
    expect(await errorOf(wrongToken)).toMatchObject({ status: 401, error_code: "ERR_SVC_3100" });
    expect((await postBody(channel, 1, "x", { token: null })).status).toBe(401);
    expect((await postBody(channel, 1, "x", { token: "short" })).status).toBe(401);
    expect((await postBody(channel, 1, null, { method: "PUT" })).status).toBe(405);
    expect((await SELF.fetch(`http://127.0.0.1:8787${AGENT_BODY_PATH}`)).status).toBe(405);
    expect(await errorOf(await postBody(channel, "0", "x"))).toMatchObject({ status: 400, msg: expect.stringContaining("`stream`") });
    expect((await postBody(channel, "1e3", "x")).status).toBe(400);
    expect(await errorOf(await postBody(channel, 1, "x", { object: "xyz" }))).toMatchObject({ status: 400, msg: expect.stringContaining("`object`") });
    // an id of the right shape that this namespace did not make reaches no object
    expect(await errorOf(await postBody(channel, 1, "x", { object: "0".repeat(64) }))).toMatchObject({
      status: 404,
      msg: "No tunnel session has that object id.",
    });
  });

  it("reset a head that announces a channel without a valid content-length, or for a response without a body", async () => {
    const { agent, tunnel } = await tunnelWithChannel();
    const pending = publicFetch(tunnel.public_url!, "/no-length");
    const head = await agent.next("request_head");
    agent.send({ type: "response_head", stream: head.stream, status: 200, headers: [], body_channel: true });
    expect(await agent.next("reset", (frame) => frame.stream === head.stream)).toMatchObject({
      code: "protocol_error",
      message: expect.stringContaining("content-length"),
    });
    expect((await pending).status).toBe(502);

    const headPending = publicFetch(tunnel.public_url!, "/head", { method: "HEAD" });
    const headHead = await agent.next("request_head");
    agent.send({ ...channelHead(headHead, 10) });
    expect(await agent.next("reset", (frame) => frame.stream === headHead.stream)).toMatchObject({ message: expect.stringContaining("has no body") });
    expect((await headPending).status).toBe(502);
  });

  it("reset a head that announces more than max_bytes, an interim status, or data frames after a channel head", async () => {
    const { agent, tunnel } = await tunnelWithChannel();
    const tooLarge = publicFetch(tunnel.public_url!, "/too-large");
    const large = await agent.next("request_head");
    agent.send(channelHead(large, BODY_CHANNEL_MAX_BYTES + 1));
    expect(await agent.next("reset", (frame) => frame.stream === large.stream)).toMatchObject({
      code: "protocol_error",
      message: expect.stringContaining(`more than the ${BODY_CHANNEL_MAX_BYTES}`),
    });
    expect((await tooLarge).status).toBe(502);

    const interim = publicFetch(tunnel.public_url!, "/interim");
    const early = await agent.next("request_head");
    agent.send({ type: "response_head", stream: early.stream, status: 103, headers: [] });
    expect(await agent.next("reset", (frame) => frame.stream === early.stream)).toMatchObject({
      message: expect.stringContaining("interim response head (103)"),
    });
    expect((await interim).status).toBe(502);

    const framed = publicFetch(tunnel.public_url!, "/framed");
    const head = await agent.next("request_head");
    agent.sendBatch([channelHead(head, 10), { type: "data", stream: head.stream, seq: 0, bytes: bytesOf(10) }]);
    expect(await agent.next("reset", (frame) => frame.stream === head.stream)).toMatchObject({
      code: "protocol_error",
      message: "a data frame for a body sent through a body channel",
    });
    expect((await framed).status).toBe(502);
  });

  it("reset the stream when the announced POST does not come within TUNNEL_BODY_CHANNEL_WAIT_MS (3 s in these tests)", async () => {
    const { agent, tunnel } = await tunnelWithChannel();
    const pending = publicFetch(tunnel.public_url!, "/never");
    const head = await agent.next("request_head");
    agent.send(channelHead(head, 1000));
    const response = await pending;
    expect(response.status).toBe(200);
    const reset = await agent.next("reset", (frame) => frame.stream === head.stream, 15_000);
    expect(reset).toMatchObject({ code: "protocol_error", message: "the announced body channel did not arrive within 3 s" });
    await expect(response.arrayBuffer()).rejects.toThrow();
  });

  it("answer a POST that overtook its head 409 when the agent resets the stream instead", async () => {
    const { agent, tunnel, channel } = await tunnelWithChannel();
    const pending = publicFetch(tunnel.public_url!, "/reset-early");
    const head = await agent.next("request_head");
    const posted = postBody(channel, head.stream, bytesOf(100));
    const early = await Promise.race([posted.then(() => "answered"), new Promise((resolve) => setTimeout(() => resolve("waiting"), 200))]);
    expect(early).toBe("waiting");
    agent.send({ type: "reset", stream: head.stream, code: "upstream_error", message: "the local service broke off" });
    expect(await errorOf(await posted)).toMatchObject({ status: 409, msg: expect.stringContaining("the local service broke off") });
    expect((await pending).status).toBe(502);
  });

  // The edge learns that the policy dropped the response body only when it next writes to it (workerd tells a
  // pipe nothing while it waits for its source), so these POSTs keep sending, as the agent's does. One that sent
  // 1000 bytes and then held still was never answered, nor the agent reset, whenever the edge piped those bytes
  // before the policy ran, as when the POST overtook the head (12 runs in 12 under CPU load).
  for (const first of ["head", "POST"] as const)
    it(`end the channel when the tunnel's policy replaces the response: the client gets the policy's answer, the POST a 409 (${first} sent first)`, async () => {
      const { agent, welcome } = await connectAgent();
      agents.push(agent);
      const tunnel = await agent.startOk({
        traffic_policy: {
          outbound: [
            { expressions: ["res.status_code == 200"], actions: [{ type: "custom-response", config: { status_code: 503, body: "under maintenance" } }] },
          ],
        },
      });
      const pending = publicFetch(tunnel.public_url!, "/replaced");
      const head = await agent.next("request_head");
      if (first === "head") agent.send(channelHead(head, BODY_CHANNEL_MIN_BYTES));
      const posted = postBody(welcome.body_channel!, head.stream, onDemandBody(BODY_CHANNEL_MIN_BYTES), { length: BODY_CHANNEL_MIN_BYTES });
      if (first === "POST") {
        // the POST waits at the object for its head (which then starts the pipe at once, before the policy runs)
        const early = await Promise.race([posted.then(() => "answered"), new Promise((resolve) => setTimeout(() => resolve("waiting"), 200))]);
        expect(early).toBe("waiting");
        agent.send(channelHead(head, BODY_CHANNEL_MIN_BYTES));
      }
      const response = await pending;
      expect(response.status).toBe(503);
      expect(await response.text()).toBe("under maintenance");
      expect(await errorOf(await posted)).toMatchObject({ status: 409 });
      expect(await agent.next("reset", (frame) => frame.stream === head.stream)).toMatchObject({ code: "cancelled" });
    });

  it("end the stream when the POST's length is not the head's: the client's body fails, the agent gets a reset", async () => {
    const { agent, tunnel, channel } = await tunnelWithChannel();
    const pending = publicFetch(tunnel.public_url!, "/short");
    const head = await agent.next("request_head");
    agent.send(channelHead(head, 5000));
    const posted = postBody(channel, head.stream, bytesOf(3000));
    const response = await pending;
    await expect(response.arrayBuffer()).rejects.toThrow();
    expect(await errorOf(await posted)).toMatchObject({ status: 409, msg: expect.stringContaining("carries 3000 bytes, the response head announced 5000") });
    expect(await agent.next("reset", (frame) => frame.stream === head.stream)).toMatchObject({ code: "protocol_error" });
  });

  it("refuse a POST without a content-length with 411", async () => {
    const { channel } = await tunnelWithChannel();
    const answer = await postBody(channel, 1, heldStream(bytesOf(10)).stream);
    expect(await errorOf(answer)).toMatchObject({ status: 411, msg: expect.stringContaining("content-length") });
  });

  it("end the POST when the public client stops reading and goes away", async () => {
    const { agent, head, held, posted, reader } = await channelInFlight("/abandoned", 1_000_000, bytesOf(1000));
    expect((await reader.read()).done).toBe(false);
    await reader.cancel();
    // The POST goes on sending, as an agent's does, until it is answered: the edge learns that the client went away
    // only when it next writes (however long that takes on a busy machine), and the body must not end first.
    let answered = false;
    const settled = () => (answered = true);
    void posted.then(settled, settled);
    for (let sent = 1000; !answered && !agent.closed && sent + 10_000 < 1_000_000; sent += 10_000) {
      try {
        held.controller.enqueue(bytesOf(10_000));
      } catch {
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const answer = await posted;
    expect(answer.status).toBe(409);
    expect(await agent.next("reset", (frame) => frame.stream === head.stream)).toMatchObject({ code: "cancelled" });
  });

  it("reset the stream when the POST breaks off midway: the client's body fails at once, the agent gets a reset", async () => {
    const { agent, channel, head, held, posted, reader } = await channelInFlight("/broken", 100_000, bytesOf(1000));
    expect((await reader.read()).done).toBe(false);
    // the agent's connection resets with 99,000 bytes still to come
    held.controller.error(new Error("connection reset"));
    await expect(reader.read()).rejects.toThrow();
    expect(await agent.next("reset", (frame) => frame.stream === head.stream)).toMatchObject({
      code: "cancelled",
      message: expect.stringContaining("the response body broke off"),
    });
    await posted.catch(() => undefined);
    // the stream is over at the edge
    expect(await errorOf(await postBody(channel, head.stream, "x"))).toMatchObject({ status: 404, msg: expect.stringContaining("is not open") });
  });

  it("reset the stream when the POST's connection fails midway: the Worker passes the failure on to the session", async () => {
    // Here the Worker's request body fails, as a reset connection does under wrangler dev (the integration above
    // hands it over as an early end instead), so the Worker's route is called with such a body.
    const { agent, tunnel, channel } = await tunnelWithChannel();
    const pending = publicFetch(tunnel.public_url!, "/reset-connection");
    const head = await agent.next("request_head");
    agent.send(channelHead(head, 100_000));
    const held = heldStream(bytesOf(1000));
    const url = new URL(`http://127.0.0.1:8787${AGENT_BODY_PATH}?object=${channel.object}&stream=${head.stream}`);
    const request = new Request(url, {
      method: "POST",
      headers: { authorization: `Bearer ${channel.token}`, "content-length": "100000" },
      body: held.stream,
    });
    const posted = routeBodyChannel(request, env, url);
    const reader = (await pending).body!.getReader();
    expect((await reader.read()).done).toBe(false);
    held.controller.error(new Error("read ECONNRESET"));
    await expect(reader.read()).rejects.toThrow();
    expect(await agent.next("reset", (frame) => frame.stream === head.stream)).toMatchObject({
      code: "cancelled",
      message: expect.stringContaining("the response body broke off"),
    });
    expect(await errorOf(await posted)).toMatchObject({ status: 409, msg: "The body channel's POST broke off: read ECONNRESET" });
  });

  it("fail a body in flight with the session: the POST is refused once the agent's connection is gone", async () => {
    const { agent, channel, head, posted, reader } = await channelInFlight("/gone", 10_000, bytesOf(100));
    // the first bytes reached the client: the POST is being piped
    expect((await reader.read()).done).toBe(false);
    agent.close();
    const answer = await posted;
    expect(await errorOf(answer)).toMatchObject({ status: 409, msg: expect.stringContaining("the agent closed its session") });
    await expect(reader.read()).rejects.toThrow();
    // the token is the ended session's: refused
    expect((await postBody(channel, head.stream, "x")).status).toBe(401);
  });
});

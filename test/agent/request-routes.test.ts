/**
 * The request-capture part of the agent API, with a real agent, a fake edge and a real local service:
 * capture through the relay, list/detail/replay/delete (also with the published ngrok client), the live
 * feed, the inspector page, and the size bound through the whole relay.
 */

import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startAgent, type Agent } from "../../src/agent/agent.ts";
import { parseAgentConfig } from "../../src/agent/settings/load.ts";
import { FakeEdge, type FakeSession } from "./support/fake-edge.ts";
import type { NgrokClientError } from "./support/ngrok-client.ts";
import { ngrokRequestClient } from "./support/ngrok-request-client.ts";
import { patternBytes, sha256, startUpstream, type Upstream } from "../support/upstream.ts";

let edge: FakeEdge;
let upstream: Upstream;
let other: Upstream;
const agents: Agent[] = [];

beforeAll(async () => {
  [edge, upstream, other] = await Promise.all([FakeEdge.start(), startUpstream(), startUpstream()]);
});

afterAll(async () => {
  await Promise.all([edge.close(), upstream.close(), other.close()]);
});

afterEach(async () => {
  await Promise.all(agents.splice(0).map((agent) => agent.stop()));
});

/** An agent online with its tunnels, and the fake edge's session to relay through. */
async function agentWith(
  tunnels: Record<string, Record<string, unknown>>,
  config: Record<string, unknown> = {},
): Promise<{ agent: Agent; session: FakeSession }> {
  const parsed = parseAgentConfig({ server_addr: edge.url, web_addr: "127.0.0.1:0", tunnels, ...config });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
  const before = edge.sessions.length;
  const agent = await startAgent({
    config: parsed.config,
    tunnels: Object.entries(parsed.config.tunnels).map(([name, definition]) => ({ name, definition })),
    backoff: { initialMs: 50, maxMs: 200 },
  });
  agents.push(agent);
  await agent.ready;
  return { agent, session: await edge.session(before) };
}

async function api(agent: Agent, path: string, init: RequestInit = {}): Promise<{ status: number; headers: Headers; body: any }> {
  const response = await fetch(`${agent.apiUrl}${path}`, init);
  const text = await response.text();
  const type = response.headers.get("content-type") ?? "";
  return { status: response.status, headers: response.headers, body: type.includes("json") && text ? JSON.parse(text) : text };
}

const post = (body: unknown, type = "application/json"): RequestInit => ({
  method: "POST",
  headers: { "content-type": type },
  body: typeof body === "string" ? body : JSON.stringify(body),
});

const raw = (base64: string) => Buffer.from(base64, "base64").toString("latin1");

describe("capturing relayed requests", () => {
  it("lists a relayed exchange with ngrok's fields, and details it", async () => {
    const { agent, session } = await agentWith({ web: { addr: upstream.port } });
    const answer = await session.relay(edge.tunnelId("web"), {
      method: "POST",
      target: "/orders?x=1",
      headers: [["content-type", "application/json"]],
      body: Buffer.from('{"n":1}'),
      clientAddr: "198.51.100.4",
    });
    expect(answer.status).toBe(200);

    const listed = await api(agent, "/api/requests/http");
    expect(listed.status).toBe(200);
    expect(listed.body.uri).toBe("/api/requests/http");
    expect(listed.body.requests).toHaveLength(1);
    const [captured] = listed.body.requests;
    expect(captured).toMatchObject({
      id: expect.stringMatching(/^airt_[0-9A-Z]{26}$/),
      tunnel_name: "web",
      remote_addr: "198.51.100.4",
      start: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d$/),
      request: {
        method: "POST",
        proto: "HTTP/1.1",
        uri: "/orders?x=1",
        headers: { "Content-Type": ["application/json"], "X-Forwarded-For": ["198.51.100.4"] },
      },
      response: { status: "200 OK", status_code: 200, proto: "HTTP/1.1", headers: { "Set-Cookie": ["a=1", "b=2"], "X-Upstream": ["yes"] } },
      state: "complete",
    });
    expect(captured.uri).toBe(`/api/requests/http/${captured.id}`);
    expect(Number.isInteger(captured.duration) && captured.duration > 0).toBe(true);
    expect(raw(captured.request.raw)).toMatch(/^POST \/orders\?x=1 HTTP\/1\.1\r\nhost: fake\.localhost\r\n[\s\S]*\r\n\r\n\{"n":1\}$/);
    const responseRaw = raw(captured.response.raw);
    expect(responseRaw).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(responseRaw.split("\r\n\r\n")[1]).toBe(answer.body.toString("latin1"));

    const detail = await api(agent, captured.uri);
    expect(detail.status).toBe(200);
    expect(detail.body).toEqual(captured);
  });

  it("captures nothing of an inspect: false tunnel", async () => {
    const { agent, session } = await agentWith({ quiet: { addr: upstream.port, inspect: false } });
    expect((await session.relay(edge.tunnelId("quiet"), { target: "/secret" })).status).toBe(200);
    expect((await api(agent, "/api/requests/http")).body.requests).toEqual([]);
  });

  it("keeps memory bounded by inspect_db_size under a flood of large uploads through the relay", async () => {
    const { agent, session } = await agentWith({ web: { addr: upstream.port } }, { inspect_db_size: 1024 * 1024 });
    const body = patternBytes(400 * 1024);
    for (let i = 0; i < 12; i++) {
      const answers = await Promise.all(
        Array.from({ length: 5 }, (_, j) => session.relay(edge.tunnelId("web"), { method: "PUT", target: `/echo/${i}-${j}`, body })),
      );
      for (const answer of answers) expect(JSON.parse(answer.body.toString()).bodySha256).toBe(sha256(body));
      expect(agent.capture!.bytes).toBeLessThanOrEqual(1024 * 1024);
    }
    const { body: listed } = await api(agent, "/api/requests/http?limit=1000");
    expect(listed.requests.length).toBeGreaterThanOrEqual(2);
    expect(listed.requests.length).toBeLessThan(10);
    expect(listed.requests[0].request).toMatchObject({ truncated: true, body_length: 400 * 1024 });
  });
});

describe("GET /api/requests/http", () => {
  it("answers newest first, 50 by default, with limit and tunnel_name; a bad limit is 400", async () => {
    const { agent, session } = await agentWith({ a: { addr: upstream.port }, b: { addr: upstream.port } });
    for (let i = 0; i < 3; i++) await session.relay(edge.tunnelId("a"), { target: `/a/${i}` });
    await session.relay(edge.tunnelId("b"), { target: "/b/0" });
    // 60 more, straight through the capture tap (the relay is tested above)
    for (let i = 0; i < 60; i++) {
      const observer = agent.capture!.tap.open({
        key: `k${i}`,
        tunnelName: "b",
        tunnelId: "tn",
        inspect: true,
        start: new Date(),
        startNs: process.hrtime.bigint(),
        method: "GET",
        target: `/bulk/${i}`,
        headers: [],
        remoteAddr: "",
        scheme: "http",
      });
      observer?.onClose?.({ durationNs: 1n });
    }
    const all = (await api(agent, "/api/requests/http")).body.requests;
    expect(all).toHaveLength(50);
    expect(all[0].request.uri).toBe("/bulk/59");
    expect(all.map((r: { id: string }) => r.id)).toEqual(
      all
        .map((r: { id: string }) => r.id)
        .sort()
        .reverse(),
    );
    expect((await api(agent, "/api/requests/http?limit=1000")).body.requests).toHaveLength(64);
    expect((await api(agent, "/api/requests/http?limit=2")).body.requests.map((r: any) => r.request.uri)).toEqual(["/bulk/59", "/bulk/58"]);
    expect((await api(agent, "/api/requests/http?tunnel_name=a")).body.requests.map((r: any) => r.request.uri)).toEqual(["/a/2", "/a/1", "/a/0"]);
    expect((await api(agent, "/api/requests/http?tunnel_name=nope")).body).toEqual({ uri: "/api/requests/http", requests: [] });
    for (const bad of ["0", "-1", "abc", "1.5", "1001"]) {
      const answer = await api(agent, `/api/requests/http?limit=${bad}`);
      expect(answer.status, bad).toBe(400);
      expect(answer.body).toMatchObject({ error_code: 108, status_code: 400, msg: "limit must be a whole number from 1 to 1000" });
    }
  });

  it("answers 404 with the JSON error body for an unknown id", async () => {
    const { agent } = await agentWith({});
    const answer = await api(agent, "/api/requests/http/airt_nope");
    expect(answer.status).toBe(404);
    expect(answer.body).toEqual({
      error_code: 100,
      status_code: 404,
      msg: "captured request 'airt_nope' not found",
      details: { err: "captured request 'airt_nope' not found" },
    });
  });
});

describe("POST /api/requests/http (replay)", () => {
  it("replays to the tunnel's local address, captured as a new exchange marked as a replay", async () => {
    const { agent, session } = await agentWith({ web: { addr: upstream.port } });
    const body = Buffer.from('{"order":7}');
    await session.relay(edge.tunnelId("web"), {
      method: "POST",
      target: "/hook?a=1",
      headers: [
        ["content-type", "application/json"],
        ["x-signature", "s1"],
      ],
      body,
    });
    const [original] = (await api(agent, "/api/requests/http")).body.requests;
    const seen = upstream.seen.length;

    const replayed = await api(agent, "/api/requests/http", post({ id: original.id }));
    expect(replayed.status).toBe(204);
    expect(replayed.body).toBe("");
    expect(upstream.seen.length).toBe(seen + 1);
    expect(upstream.seen.at(-1)).toMatchObject({
      method: "POST",
      url: "/hook?a=1",
      headers: { "x-signature": "s1", "content-length": String(body.length), "x-forwarded-for": original.remote_addr },
    });

    const [replay, first] = (await api(agent, "/api/requests/http")).body.requests;
    expect(first.id).toBe(original.id);
    expect(replay).toMatchObject({ tunnel_name: "web", replay_of: original.id, request: { method: "POST", uri: "/hook?a=1" }, response: { status_code: 200 } });
    expect(replay.id > original.id).toBe(true);
    expect(raw(replay.request.raw).split("\r\n\r\n")[1]).toBe('{"order":7}');
    expect(JSON.parse(raw(replay.response.raw).split("\r\n\r\n")[1])).toMatchObject({ bodySha256: sha256(body) });
  });

  it("replays to another tunnel's address when named, and with modifications", async () => {
    const { agent, session } = await agentWith({ web: { addr: upstream.port }, staging: { addr: other.port } });
    await session.relay(edge.tunnelId("web"), { method: "POST", target: "/hook", headers: [["x-keep", "1"]], body: Buffer.from("original") });
    const [original] = (await api(agent, "/api/requests/http")).body.requests;

    expect((await api(agent, "/api/requests/http", post({ id: original.id, tunnel_name: "staging" }))).status).toBe(204);
    expect(other.seen.at(-1)).toMatchObject({ method: "POST", url: "/hook" });

    const modified = await api(
      agent,
      "/api/requests/http",
      post({ id: original.id, request: { method: "PUT", uri: "/hook/v2?dry=1", headers: { "X-Changed": "yes", Accept: ["a", "b"] }, body: "changed body" } }),
    );
    expect(modified.status).toBe(204);
    const sent = upstream.seen.at(-1)!;
    expect(sent).toMatchObject({ method: "PUT", url: "/hook/v2?dry=1", headers: { "x-changed": "yes", accept: "a, b", "content-length": "12" } });
    expect(sent.headers["x-keep"]).toBeUndefined();
    const [replay] = (await api(agent, "/api/requests/http")).body.requests;
    expect(replay).toMatchObject({ replay_of: original.id, tunnel_name: "web", request: { method: "PUT", uri: "/hook/v2?dry=1" } });
    expect(raw(replay.request.raw).endsWith("\r\n\r\nchanged body")).toBe(true);
  });

  it("answers 404 for an unknown id or tunnel, 400 without an id or with bad modifications, 415 for a body that is not JSON", async () => {
    const { agent, session } = await agentWith({ web: { addr: upstream.port } });
    await session.relay(edge.tunnelId("web"), { target: "/x" });
    const [original] = (await api(agent, "/api/requests/http")).body.requests;
    const seen = upstream.seen.length;

    expect((await api(agent, "/api/requests/http", post({ id: "airt_unknown" }))).body).toMatchObject({
      error_code: 100,
      status_code: 404,
      msg: "captured request 'airt_unknown' not found",
    });
    expect((await api(agent, "/api/requests/http", post({ id: original.id, tunnel_name: "gone" }))).body).toMatchObject({
      error_code: 100,
      status_code: 404,
      msg: "tunnel 'gone' not found",
    });
    const missing = await api(agent, "/api/requests/http", post({ tunnel_name: "web" }));
    expect(missing.status).toBe(400);
    expect(missing.body).toMatchObject({ error_code: 108, msg: "invalid replay request: id: is required" });
    expect((await api(agent, "/api/requests/http", post({ id: 5 }))).body.details.err).toBe("id: must be a string");
    expect((await api(agent, "/api/requests/http", post({ id: original.id, request: { headers: { "bad name": "x" } } }))).body.details.err).toBe(
      "request.headers.bad name: header names are HTTP tokens",
    );
    expect((await api(agent, "/api/requests/http", post({ id: original.id, request: { headers: { ok: "a\r\nb: c" } } }))).body.details.err).toBe(
      "request.headers.ok: a header value cannot contain CR, LF or NUL",
    );
    expect((await api(agent, "/api/requests/http", post({ id: original.id, request: { headers: { ok: ["a", 5] } } }))).body.details.err).toBe(
      "request.headers.ok: must be a string or a list of strings",
    );
    expect((await api(agent, "/api/requests/http", post({ id: original.id, request: { headers: ["x: y"] } }))).body.details.err).toBe(
      "request.headers: must be a map of header names to a value or a list of values",
    );
    expect((await api(agent, "/api/requests/http", post({ id: original.id, request: { uri: "no-slash" } }))).body.details.err).toBe(
      "request.uri: must be a path (and query) starting with /, without spaces",
    );
    expect((await api(agent, "/api/requests/http", post({ id: original.id, colour: "red" }))).status).toBe(400);
    expect((await api(agent, "/api/requests/http", post("{not json"))).status).toBe(400);
    for (const type of ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]) {
      const answer = await api(agent, "/api/requests/http", post(`id=${original.id}`, type));
      expect(answer.status, type).toBe(415);
      expect(answer.body.error_code).toBe(105);
    }
    expect(upstream.seen.length).toBe(seen);
  });
});

/** A local service that records each request's raw header lines and answers with headers of the same names. */
async function rawHeaderService(answer: Array<[string, string]>): Promise<{ port: number; seen: Array<Array<[string, string]>>; close(): Promise<void> }> {
  const seen: Array<Array<[string, string]>> = [];
  const server = createServer((request, response) => {
    const pairs: Array<[string, string]> = [];
    for (let i = 0; i + 1 < request.rawHeaders.length; i += 2) pairs.push([request.rawHeaders[i], request.rawHeaders[i + 1]]);
    seen.push(pairs);
    request.resume();
    request.on("end", () => {
      response.writeHead(200, answer.flat());
      response.end("ok");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    seen,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe("header names that are Object.prototype's", () => {
  const names = ["__proto__", "constructor", "toString", "hasOwnProperty", "valueOf"];

  it("are captured, listed, detailed and replayed like any other header", async () => {
    const service = await rawHeaderService(names.map((name) => [name, `answer-${name}`]));
    try {
      const { agent, session } = await agentWith({ web: { addr: service.port } });
      const answer = await session.relay(edge.tunnelId("web"), { target: "/proto", headers: names.map((name) => [name, `sent-${name}`]) });
      expect(answer.status).toBe(200);

      const listed = await api(agent, "/api/requests/http");
      expect(listed.status).toBe(200);
      const [captured] = listed.body.requests;
      // canonical names, as Go's net/http writes them
      const requestHeaders = {
        ["__proto__"]: ["sent-__proto__"],
        Constructor: ["sent-constructor"],
        Tostring: ["sent-toString"],
        Hasownproperty: ["sent-hasOwnProperty"],
        Valueof: ["sent-valueOf"],
      };
      const responseHeaders = {
        ["__proto__"]: ["answer-__proto__"],
        Constructor: ["answer-constructor"],
        Tostring: ["answer-toString"],
        Hasownproperty: ["answer-hasOwnProperty"],
        Valueof: ["answer-valueOf"],
      };
      for (const [name, values] of Object.entries(requestHeaders)) expect(captured.request.headers[name], name).toEqual(values);
      for (const [name, values] of Object.entries(responseHeaders)) expect(captured.response.headers[name], name).toEqual(values);
      expect(Object.keys(captured.request.headers)).toContain("__proto__");
      expect(raw(captured.request.raw)).toContain("\r\n__proto__: sent-__proto__\r\n");

      const detail = await api(agent, captured.uri);
      expect(detail.status).toBe(200);
      expect(detail.body).toEqual(captured);

      expect((await api(agent, "/api/requests/http", post({ id: captured.id }))).status).toBe(204);
      const replayed = service.seen.at(-1)!;
      for (const name of names) expect(replayed, name).toContainEqual([name, `sent-${name}`]);
      const [replay] = (await api(agent, "/api/requests/http")).body.requests;
      expect(replay).toMatchObject({ replay_of: captured.id, response: { status_code: 200 } });
      expect(Object.keys(replay.request.headers)).toContain("__proto__");

      const modified = await api(
        agent,
        "/api/requests/http",
        post({ id: captured.id, request: { headers: { ["__proto__"]: "changed", constructor: ["c1", "c2"], toString: "t" } } }),
      );
      expect(modified.status).toBe(204);
      expect(service.seen.at(-1)).toEqual(
        expect.arrayContaining([
          ["__proto__", "changed"],
          ["constructor", "c1"],
          ["constructor", "c2"],
          ["toString", "t"],
        ]),
      );
    } finally {
      await service.close();
    }
  });
});

describe("DELETE /api/requests/http", () => {
  it("answers 204 and empties the list", async () => {
    const { agent, session } = await agentWith({ web: { addr: upstream.port } });
    await session.relay(edge.tunnelId("web"), { target: "/x" });
    const answer = await api(agent, "/api/requests/http", { method: "DELETE" });
    expect(answer.status).toBe(204);
    expect((await api(agent, "/api/requests/http")).body.requests).toEqual([]);
    expect(agent.capture!.bytes).toBe(0);
    expect((await api(agent, "/api/requests/http", { method: "PATCH" })).status).toBe(405);
  });
});

describe("the published ngrok client", () => {
  it("lists, details, replays and deletes captured requests", async () => {
    const { agent, session } = await agentWith({ web: { addr: upstream.port }, staging: { addr: other.port } });
    await session.relay(edge.tunnelId("web"), { target: "/from-ngrok-client" });
    const client = ngrokRequestClient(agent.apiUrl!);
    const listed = await client.listRequests({ limit: 10, tunnel_name: "web" });
    expect(listed.uri).toBe("/api/requests/http");
    expect(listed.requests).toHaveLength(1);
    const id = listed.requests[0].id;
    expect(await client.requestDetail(id)).toMatchObject({ id, request: { uri: "/from-ngrok-client" } });
    expect(await client.replayRequest(id, "staging")).toBe(true);
    expect(other.seen.at(-1)).toMatchObject({ url: "/from-ngrok-client" });
    expect((await client.listRequests({ tunnel_name: "staging" })).requests).toHaveLength(1);
    expect(await client.deleteAllRequests()).toBe(true);
    expect((await client.listRequests()).requests).toEqual([]);
    const error = (await client.requestDetail(id).catch((e: unknown) => e)) as NgrokClientError;
    expect(error.response.statusCode).toBe(404);
    expect(error.body).toMatchObject({ error_code: 100 });
  });
});

/** Reads server-sent events from a fetch response until `count` events arrived. */
async function readEvents(response: Response, count: number): Promise<Array<{ event: string; data: any }>> {
  const reader = response.body!.getReader();
  const events: Array<{ event: string; data: any }> = [];
  let text = "";
  while (events.length < count) {
    const { value, done } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
    let end: number;
    while ((end = text.indexOf("\n\n")) >= 0) {
      const block = text.slice(0, end);
      text = text.slice(end + 2);
      const event = /^event: (.*)$/m.exec(block)?.[1];
      const data = block
        .split("\n")
        .filter((line) => line.startsWith("data: "))
        .map((line) => line.slice(6))
        .join("\n");
      if (event) events.push({ event, data: JSON.parse(data) });
    }
  }
  reader.releaseLock();
  return events;
}

describe("the live feed", () => {
  it("starts with a snapshot, then sends batches of changes, and lets go when the reader leaves", async () => {
    const { agent, session } = await agentWith({ web: { addr: upstream.port } });
    await session.relay(edge.tunnelId("web"), { target: "/before" });
    const controller = new AbortController();
    const response = await fetch(`${agent.apiUrl}/api/requests/http/events`, { signal: controller.signal });
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    const [snapshot] = await readEvents(response, 1);
    expect(snapshot).toMatchObject({ event: "snapshot", data: { requests: [{ uri: "/before", status_code: 200, state: "complete" }] } });

    await session.relay(edge.tunnelId("web"), { target: "/after" });
    const changes: any[] = [];
    while (!changes.some((batch) => batch.upsert.some((summary: any) => summary.uri === "/after" && summary.state === "complete"))) {
      changes.push(...(await readEvents(response, 1)).map((event) => event.data));
    }
    await api(agent, "/api/requests/http", { method: "DELETE" });
    const [cleared] = await readEvents(response, 1);
    expect(cleared).toMatchObject({ event: "changes", data: { clear: true } });

    expect(agent.capture!.listenerCount).toBe(1);
    controller.abort();
    await expect.poll(() => agent.capture!.listenerCount, { timeout: 10_000 }).toBe(0);
  });
});

describe("the inspector page", () => {
  it("is served at / with a strict Content-Security-Policy, its assets beside it, behind the Host check", async () => {
    const { agent } = await agentWith({});
    const page = await api(agent, "/");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(page.headers.get("content-security-policy")).toContain("script-src 'self'");
    expect(page.body).toContain('<script type="module" src="/inspector/inspector.js">');
    expect(page.body).not.toMatch(/https?:\/\//);
    for (const [path, type] of [
      ["/inspector/inspector.js", "text/javascript"],
      ["/inspector/format.js", "text/javascript"],
      ["/inspector/inspector.css", "text/css"],
    ]) {
      const asset = await api(agent, path);
      expect(asset.status, path).toBe(200);
      expect(asset.headers.get("content-type")).toContain(type);
      expect(asset.body).not.toMatch(/(src|href|import)[^\n]*https?:\/\//);
    }
    expect((await api(agent, "/status")).status).toBe(200);
    expect((await api(agent, "/inspector/nope.js")).status).toBe(404);
    // fetch cannot set Host: plain node:http can
    const { request } = await import("node:http");
    const rebound = await new Promise<number>((resolve, reject) => {
      const { port } = new URL(agent.apiUrl!);
      request({ host: "127.0.0.1", port, path: "/", headers: { host: "evil.example" } }, (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      })
        .on("error", reject)
        .end();
    });
    expect(rebound).toBe(403);
    expect((await api(agent, "/api/")).body.resources.requests).toEqual({ uri: "/api/requests/http", methods: ["GET", "POST", "DELETE"] });
  });
});

/**
 * Tunnels end to end: the Worker under `wrangler dev`, the agent (in-process, and the CLI as a child
 * process), a real local upstream, the published ngrok client against the agent API, and the management
 * API. One edge for the whole file; the last test kills and restarts it.
 */

import { spawn, type ChildProcessByStdio } from "node:child_process";
import { createInterface } from "node:readline";
import type { AddressInfo } from "node:net";
import type { Readable } from "node:stream";
import WebSocket, { WebSocketServer } from "ws";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startAgent, type Agent } from "../../src/agent/agent.ts";
import { parseAgentConfig } from "../../src/agent/settings/load.ts";
import { ngrokClient, type NgrokClient, type NgrokClientError } from "../agent/support/ngrok-client.ts";
import { closedPort, patternBytes, sha256, startUpstream, type Upstream } from "../support/upstream.ts";
import { freePort } from "../support/free-port.ts";
import { Edge } from "./support/edge.ts";
import { fetchPublic, jsonOf, openPublic } from "./support/public-client.ts";

const TEN_MIB = 10 * 1024 * 1024;

let edge: Edge;
let upstream: Upstream;
let agent: Agent;
let client: NgrokClient;

/** The management API allows 120 requests a minute per key: poll it gently. */
const MANAGEMENT_POLL_MS = 400;

async function onlineIds(): Promise<string[]> {
  const { status, body } = await edge.management("/tunnels");
  if (status !== 200) throw new Error(`GET /tunnels answered ${status}: ${JSON.stringify(body)}`);
  return (body.tunnels as Array<{ id: string }>).map((tunnel) => tunnel.id);
}

beforeAll(async () => {
  [edge, upstream] = await Promise.all([Edge.start({ heartbeatMs: 1000 }), startUpstream()]);
  const parsed = parseAgentConfig({ server_addr: edge.url, web_addr: "127.0.0.1:0" });
  if (!parsed.ok) throw new Error("bad test config");
  agent = await startAgent({ config: parsed.config, backoff: { initialMs: 100, maxMs: 1000 } });
  await agent.ready;
  client = ngrokClient(agent.apiUrl!);
});

afterAll(async () => {
  await agent?.stop();
  await upstream?.close();
  await edge?.dispose();
});

describe("a tunnel through the agent API", () => {
  it("serves its public URL, moves its metrics, is listed by the management API, and is gone from both when stopped", async () => {
    const started = await client.startTunnel({ name: "web", proto: "http", addr: upstream.port });
    expect(started.public_url).toMatch(new RegExp(`^http://[a-z0-9]{12}\\.localhost:${edge.port}$`));

    const answer = await fetchPublic(edge.url, started.public_url, "/hello/world?x=1&y=two", { headers: { "x-custom": "yes" } });
    expect(answer.status).toBe(200);
    expect(answer.headers["x-upstream"]).toBe("yes");
    expect(answer.headers["set-cookie"]).toEqual(["a=1", "b=2"]);
    const echoed = jsonOf(answer);
    expect(echoed).toMatchObject({ method: "GET", url: "/hello/world?x=1&y=two" });
    expect(echoed.headers).toMatchObject({
      host: new URL(started.public_url).host,
      "x-custom": "yes",
      "x-forwarded-proto": "http",
      "x-forwarded-for": "127.0.0.1",
    });

    const detail = (await client.tunnelDetail("web")) as { metrics: { conns: { count: number }; http: { count: number; p50: number } } };
    expect(detail.metrics.conns.count).toBe(1);
    expect(detail.metrics.http.count).toBe(1);
    expect(detail.metrics.http.p50).toBeGreaterThan(0);

    const tunnel = agent.tunnels.get("web")!;
    const listed = await edge.management("/tunnels");
    expect(listed.status).toBe(200);
    const record = (listed.body.tunnels as Array<Record<string, any>>).find((t) => t.id === tunnel.id);
    expect(record).toMatchObject({
      id: tunnel.id,
      public_url: started.public_url,
      proto: "http",
      region: expect.any(String),
      forwards_to: `http://localhost:${upstream.port}`,
      tunnel_session: { id: agent.session.status.sessionId },
      endpoint: { id: expect.stringMatching(/^ep_/) },
      started_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    expect((await edge.management(`/tunnels/${tunnel.id}`)).status).toBe(200);

    expect(await client.stopTunnel("web")).toBe(true);
    const gone = (await client.tunnelDetail("web").catch((error: unknown) => error)) as NgrokClientError;
    expect(gone.response.statusCode).toBe(404);
    const offline = await fetchPublic(edge.url, started.public_url, "/hello");
    expect(offline.status).toBe(404);
    expect(jsonOf(offline)).toMatchObject({ error_code: "ERR_SVC_3200" });
    expect(await onlineIds()).not.toContain(tunnel.id);
    expect((await edge.management(`/tunnels/${tunnel.id}`)).status).toBe(404);
  });

  it("passes a 10 MiB upload and a 10 MiB download intact", async () => {
    const { public_url } = await client.startTunnel({ name: "big", addr: upstream.port });
    const upload = patternBytes(TEN_MIB, 7);
    const echoed = jsonOf(
      await fetchPublic(edge.url, public_url, "/echo", { method: "POST", body: upload, headers: { "content-type": "application/octet-stream" } }),
    );
    expect(echoed).toMatchObject({ method: "POST", bodyLength: TEN_MIB, bodySha256: sha256(upload) });
    const download = await fetchPublic(edge.url, public_url, `/bytes/${TEN_MIB}`);
    expect(download.status).toBe(200);
    expect(download.body.length).toBe(TEN_MIB);
    expect(sha256(download.body)).toBe(sha256(patternBytes(TEN_MIB)));
  });

  it("keeps serving other requests while a client stops reading a large download", async () => {
    const { public_url } = await client.startTunnel({ name: "slow", addr: upstream.port });
    const stalled = await openPublic(edge.url, public_url, `/bytes/${TEN_MIB}`);
    stalled.pause();
    // Other requests complete while the download is still paused: a slow reader holds back only its own stream.
    for (let i = 0; i < 5; i++) expect((await fetchPublic(edge.url, public_url, `/echo/${i}`)).status).toBe(200);
    expect(stalled.isPaused()).toBe(true);
    const chunks: Buffer[] = [];
    stalled.resume();
    for await (const chunk of stalled) chunks.push(chunk as Buffer);
    expect(sha256(Buffer.concat(chunks))).toBe(sha256(patternBytes(TEN_MIB)));
  });

  it("relays a WebSocket: subprotocol, text and binary messages both ways in order, close code", async () => {
    const local = new WebSocketServer({ port: 0, host: "127.0.0.1", handleProtocols: (protocols) => (protocols.has("chat") ? "chat" : false) });
    local.on("connection", (socket, request) => {
      socket.send(`welcome to ${request.url} via ${request.headers["x-forwarded-host"]}`);
      socket.on("message", (data, isBinary) => {
        if (!isBinary && data.toString() === "bye") socket.close(4001, "asked to");
        else socket.send(data, { binary: isBinary });
      });
    });
    await new Promise((resolve) => local.once("listening", resolve));
    try {
      const { public_url } = await client.startTunnel({ name: "ws", addr: (local.address() as AddressInfo).port });
      const host = new URL(public_url).host;
      const socket = new WebSocket(`ws://127.0.0.1:${edge.port}/live?x=1`, ["chat"], { headers: { host } });
      const messages: Array<{ data: string; binary: boolean }> = [];
      socket.on("message", (data: Buffer, isBinary) => messages.push({ data: isBinary ? data.toString("hex") : data.toString(), binary: isBinary }));
      const closed = new Promise<[number, string]>((resolve) => socket.once("close", (code, reason) => resolve([code, reason.toString()])));
      await new Promise((resolve, reject) => socket.once("open", resolve).once("error", reject));
      expect(socket.protocol).toBe("chat");
      socket.send("ping");
      socket.send(Buffer.from([1, 2, 255]));
      await expect.poll(() => messages.length, { timeout: 5_000, interval: 100 }).toBe(3);
      expect(messages).toEqual([
        { data: `welcome to /live?x=1 via ${host}`, binary: false },
        { data: "ping", binary: false },
        { data: "0102ff", binary: true },
      ]);
      // order holds over a burst, text and binary mixed
      for (let i = 0; i < 500; i++) socket.send(i % 2 ? String(i) : Buffer.from(String(i)));
      await expect.poll(() => messages.length, { timeout: 10_000, interval: 100 }).toBe(503);
      expect(
        messages
          .slice(3)
          .map((message, i) => (message.binary ? Buffer.from(message.data, "hex").toString() : message.data) === String(i))
          .every(Boolean),
      ).toBe(true);
      socket.send("bye");
      expect(await closed).toEqual([4001, "asked to"]);
    } finally {
      local.close();
    }
  });

  it("answers 502 with a clear message when the local service refuses", async () => {
    const port = await closedPort();
    const { public_url } = await client.startTunnel({ name: "down", addr: port });
    const answer = await fetchPublic(edge.url, public_url, "/");
    expect(answer.status).toBe(502);
    const body = jsonOf(answer);
    expect(body.error_code).toBe("ERR_SVC_8012");
    expect(body.msg).toContain(`could not connect to http://localhost:${port}`);
  });

  it("refuses tcp tunnels with the edge's reason (Workers ingress serves HTTP only)", async () => {
    const error = (await client.startTunnel({ name: "ssh", proto: "tcp", addr: 22 }).catch((e: unknown) => e)) as NgrokClientError;
    expect(error.response.statusCode).toBe(502);
    expect(error.body).toMatchObject({ error_code: 103, status_code: 502 });
    expect((error.body as { details: { err: string } }).details.err).toContain(
      "tcp tunnels are not supported: Cloudflare Workers ingress accepts only HTTP(S)",
    );
  });
});

describe("the tollgate CLI", () => {
  it("`agent http` serves, goes offline within seconds when it stops answering heartbeats, comes back, and exits cleanly on Ctrl-C", async () => {
    const webPort = await freePort();
    const cli: ChildProcessByStdio<null, Readable, Readable> = spawn(
      process.execPath,
      [
        fileURLToPath(new URL("../../bin/tollgate.mjs", import.meta.url)),
        "agent",
        "http",
        String(upstream.port),
        "--server-addr",
        edge.url,
        "--web-addr",
        `127.0.0.1:${webPort}`,
        "--name",
        "cli",
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    const lines: string[] = [];
    createInterface({ input: cli.stdout }).on("line", (line) => lines.push(line));
    createInterface({ input: cli.stderr }).on("line", (line) => lines.push(`stderr: ${line}`));
    const exited = new Promise<number | null>((resolve) => cli.once("exit", (code) => resolve(code)));
    try {
      const online = await vi.waitFor(
        () => {
          const line = lines.find((candidate) => candidate.includes('msg="tunnel online"'));
          expect(line, lines.join("\n")).toBeDefined();
          return line!;
        },
        // A ceiling for a busy machine: the CLI runs from source (tsx) here.
        { timeout: 45_000, interval: 100 },
      );
      expect(online).toMatch(/lvl=info msg="tunnel online" name=cli url=http:\/\/[a-z0-9]+\.localhost:\d+ addr=http:\/\/localhost:\d+ id=tn_/);
      const publicUrl = /url=(\S+)/.exec(online)![1];
      const tunnelId = /id=(tn_\S+)/.exec(online)![1];
      expect((await fetchPublic(edge.url, publicUrl, "/via-cli")).status).toBe(200);
      expect(await onlineIds()).toContain(tunnelId);

      cli.kill("SIGSTOP");
      // Three missed heartbeats take it offline; the poll's ceiling is generous for a busy machine.
      await expect.poll(onlineIds, { timeout: 20_000, interval: MANAGEMENT_POLL_MS }).not.toContain(tunnelId);
      expect((await fetchPublic(edge.url, publicUrl, "/")).status).toBe(404);

      cli.kill("SIGCONT");
      await expect.poll(() => fetchPublic(edge.url, publicUrl, "/back").then((answer) => answer.status), { timeout: 15_000, interval: 250 }).toBe(200);

      cli.kill("SIGINT");
      expect(await exited).toBe(0);
      expect(lines.join("\n")).toContain('msg="shutting down"');
      await expect.poll(async () => (await fetchPublic(edge.url, publicUrl, "/")).status, { timeout: 5_000, interval: 100 }).toBe(404);
    } finally {
      if (cli.exitCode === null) cli.kill("SIGKILL");
    }
  }, 120_000);
});

describe("when the edge restarts", () => {
  it("the agent reconnects and its tunnel serves the same public URL again; the registry lists exactly what is online", async () => {
    const { public_url } = await client.startTunnel({ name: "survivor", addr: upstream.port });
    expect((await fetchPublic(edge.url, public_url, "/before")).status).toBe(200);
    await edge.stop();
    await expect.poll(() => agent.session.status.state, { timeout: 10_000, interval: 100 }).toBe("reconnecting");
    await edge.start();
    await expect
      .poll(() => [agent.session.status.state, agent.tunnels.get("survivor")?.state], { timeout: 30_000, interval: 100 })
      .toEqual(["online", "online"]);
    expect(agent.session.status.reconnects).toBeGreaterThanOrEqual(1);
    expect(agent.tunnels.get("survivor")!.publicUrl).toBe(public_url);
    // Status and body together, so a failure says which 502 it was (local service or agent).
    const after = await fetchPublic(edge.url, public_url, "/after");
    expect({ status: after.status, body: after.status === 200 ? "" : after.body.toString("utf8") }).toEqual({ status: 200, body: "" });
    const current = agent.tunnels
      .list()
      .filter((tunnel) => tunnel.state === "online")
      .map((tunnel) => tunnel.id)
      .sort();
    await expect.poll(async () => (await onlineIds()).sort(), { timeout: 10_000, interval: MANAGEMENT_POLL_MS }).toEqual(current);
  });
});

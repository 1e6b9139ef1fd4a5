/**
 * Names that come from the public internet and happen to be Object.prototype's (`__proto__`,
 * `constructor`, `toString`, …) on the paths not covered in request-routes.test.ts: a relayed WebSocket's
 * handshake, and the inspector's header editor (format.js, pure, run here in Node).
 */

import type { IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { WebSocketServer } from "ws";
import { startAgent, type Agent } from "../../src/agent/agent.ts";
import { headerLines, parseHeaderLines } from "../../src/agent/inspector/assets/format.js";
import { parseAgentConfig } from "../../src/agent/settings/load.ts";
import { FakeEdge } from "./support/fake-edge.ts";

const NAMES = ["__proto__", "constructor", "toString", "hasOwnProperty", "valueOf"];

let edge: FakeEdge;
const agents: Agent[] = [];

beforeAll(async () => {
  edge = await FakeEdge.start();
});

afterAll(async () => {
  await edge.close();
});

afterEach(async () => {
  await Promise.all(agents.splice(0).map((agent) => agent.stop()));
});

describe("a relayed WebSocket", () => {
  it("reaches the local service with headers named like Object.prototype's members, as sent", async () => {
    const handshakes: IncomingMessage[] = [];
    const server = new WebSocketServer({ host: "127.0.0.1", port: 0 });
    server.on("connection", (_socket, request) => handshakes.push(request));
    await new Promise((resolve) => server.once("listening", resolve));
    try {
      const parsed = parseAgentConfig({ server_addr: edge.url, web_addr: "127.0.0.1:0", tunnels: { ws: { addr: (server.address() as AddressInfo).port } } });
      if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
      const before = edge.sessions.length;
      const agent = await startAgent({
        config: parsed.config,
        tunnels: [{ name: "ws", definition: parsed.config.tunnels.ws }],
        backoff: { initialMs: 50, maxMs: 200 },
      });
      agents.push(agent);
      await agent.ready;
      const session = await edge.session(before);

      const stream = 1001;
      session.send({
        type: "request_head",
        stream,
        tunnel_id: edge.tunnelId("ws"),
        method: "GET",
        target: "/socket",
        headers: [
          ["host", "fake.localhost"],
          ["upgrade", "websocket"],
          ["connection", "Upgrade"],
          ["sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="],
          ["sec-websocket-version", "13"],
          ...NAMES.map((name): [string, string] => [name, `sent-${name}`]),
        ],
        client_addr: "203.0.113.7",
        scheme: "http",
        upgrade: "websocket",
      });
      expect(await session.next("response_head", (frame) => frame.stream === stream)).toMatchObject({ status: 101 });

      const raw = handshakes[0].rawHeaders;
      const received = new Map<string, string>();
      for (let i = 0; i + 1 < raw.length; i += 2) received.set(raw[i].toLowerCase(), raw[i + 1]);
      for (const name of NAMES) expect(received.get(name.toLowerCase()), name).toBe(`sent-${name}`);
    } finally {
      for (const client of server.clients) client.terminate();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe("the inspector's header editor", () => {
  it("reads header lines named like Object.prototype's members into a map it sends as JSON with those keys", () => {
    const text = `${NAMES.map((name) => `${name}: ${name}-value`).join("\n")}\nconstructor: second`;
    const parsed = parseHeaderLines(text);
    expect(parsed.error).toBeUndefined();
    expect(JSON.parse(JSON.stringify(parsed.headers))).toEqual(
      JSON.parse(
        '{"__proto__":["__proto__-value"],"constructor":["constructor-value","second"],"toString":["toString-value"],"hasOwnProperty":["hasOwnProperty-value"],"valueOf":["valueOf-value"]}',
      ),
    );
    expect(headerLines(parsed.headers!)).toBe(
      NAMES.map((name) => `${name}: ${name}-value`)
        .join("\n")
        .replace("constructor: constructor-value", "constructor: constructor-value\nconstructor: second"),
    );
  });
});

/**
 * Request heads past the relay's bounds, end to end (issue 41): the Worker under `wrangler dev`, one in-process
 * agent session carrying two tunnels, and a raw socket (fetch refuses some of these heads) sending each kind
 * of over-limit head to one tunnel. Each is answered at the edge (431, 414, 501) and never relayed; the
 * session stays up and the other tunnel keeps answering 200, without a reconnect. Before the edge checked,
 * each such head closed the agent's session (1002) and both tunnels answered 404 until it reconnected.
 */

import { createServer, type Server } from "node:http";
import { connect, type AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAgent, type Agent } from "../../src/agent/agent.ts";
import { parseAgentConfig } from "../../src/agent/settings/load.ts";
import {
  MAX_HEADER_FIELDS,
  MAX_HEADER_NAME_CHARS,
  MAX_HEADER_VALUE_CHARS,
  MAX_METHOD_CHARS,
  MAX_REQUEST_HEAD_BYTES,
  MAX_TARGET_CHARS,
} from "../../src/relay/head-bounds.ts";
import { ngrokClient } from "../agent/support/ngrok-client.ts";
import { Edge } from "./support/edge.ts";

let edge: Edge;
let agent: Agent;
let local: Server;
let attacked: string;
let bystander: string;

interface RawAnswer {
  status: number;
  body: string;
}

/** One request over its own connection, written byte for byte as given; resolves with the status line's code and the body. */
function rawRequest(publicUrl: string, { method = "GET", target = "/", headers = [] as Array<[string, string]> } = {}): Promise<RawAnswer> {
  const host = new URL(publicUrl).host;
  const head = `${method} ${target} HTTP/1.1\r\nhost: ${host}\r\n${headers.map(([name, value]) => `${name}: ${value}\r\n`).join("")}connection: close\r\n\r\n`;
  return new Promise((resolve, reject) => {
    const socket = connect(edge.port, "127.0.0.1", () => socket.end(head));
    const chunks: Buffer[] = [];
    socket.on("data", (chunk) => chunks.push(chunk));
    socket.on("error", reject);
    socket.on("close", () => {
      const text = Buffer.concat(chunks).toString("latin1");
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
      resolve({ status, body: text.slice(text.indexOf("\r\n\r\n") + 4) });
    });
  });
}

const fields = (n: number): Array<[string, string]> => Array.from({ length: n }, (_, i) => [`x-field-${i}`, "v"]);

beforeAll(async () => {
  edge = await Edge.start({ heartbeatMs: 1000 });
  // Node's own header bounds (16 KiB, 2000 fields) would answer 431 for the local service; it takes what the relay takes
  local = createServer({ maxHeaderSize: 4 * 1024 * 1024 }, (request, response) => {
    response.setHeader("content-type", "application/json");
    response.end(JSON.stringify({ fields: request.rawHeaders.length / 2, longest: Math.max(...request.rawHeaders.map((text) => text.length)) }));
  });
  await new Promise<void>((resolve) => local.listen(0, "127.0.0.1", resolve));
  const port = (local.address() as AddressInfo).port;
  const parsed = parseAgentConfig({ server_addr: edge.url, web_addr: "127.0.0.1:0" });
  if (!parsed.ok) throw new Error("bad test config");
  agent = await startAgent({ config: parsed.config, backoff: { initialMs: 100, maxMs: 1000 } });
  await agent.ready;
  const client = ngrokClient(agent.apiUrl!);
  attacked = (await client.startTunnel({ name: "attacked", proto: "http", addr: port })).public_url;
  bystander = (await client.startTunnel({ name: "bystander", proto: "http", addr: port })).public_url;
});

afterAll(async () => {
  await agent?.stop();
  await new Promise((resolve) => local?.close(resolve));
  await edge?.dispose();
});

/** The session as it was when the tunnels opened: the same id, no reconnect since, both tunnels answering. */
async function expectSessionUntouched(sessionId: string | undefined): Promise<void> {
  expect((await rawRequest(bystander)).status).toBe(200);
  expect((await rawRequest(attacked)).status).toBe(200);
  expect(agent.session.status).toMatchObject({ state: "online", sessionId, reconnects: 0 });
}

describe("a request head past the relay's bounds", () => {
  const kinds: Array<{ kind: string; status: number; request: Parameters<typeof rawRequest>[1] }> = [
    {
      kind: `a header value of ${MAX_HEADER_VALUE_CHARS + 1} characters`,
      status: 431,
      request: { headers: [["x-big", "v".repeat(MAX_HEADER_VALUE_CHARS + 1)]] },
    },
    {
      kind: `a header name of ${MAX_HEADER_NAME_CHARS + 1} characters`,
      status: 431,
      request: { headers: [[`x-${"n".repeat(MAX_HEADER_NAME_CHARS - 1)}`, "v"]] },
    },
    {
      kind: `${MAX_HEADER_FIELDS} fields besides Host: ${MAX_HEADER_FIELDS + 1} once the edge adds its own`,
      status: 431,
      request: { headers: fields(MAX_HEADER_FIELDS) },
    },
    {
      kind: "two copies of a header, each within the bound, joined past it",
      status: 431,
      request: {
        headers: [
          ["x-twice", "a".repeat(MAX_HEADER_VALUE_CHARS / 2 + 1)],
          ["x-twice", "b".repeat(MAX_HEADER_VALUE_CHARS / 2 + 1)],
        ],
      },
    },
    { kind: `a target of ${MAX_TARGET_CHARS + 1} characters`, status: 414, request: { target: `/${"t".repeat(MAX_TARGET_CHARS)}` } },
    {
      kind: "a client address of 65 characters (cf-connecting-ip stands in for it locally)",
      status: 431,
      request: { headers: [["cf-connecting-ip", "1".repeat(65)]] },
    },
    // workerd answers these two itself ("Unrecognized request method", "header too large"): the edge's check is their
    // second line, covered by test/unit/relay/head-bounds.property.test.ts
    { kind: `a method of ${MAX_METHOD_CHARS + 1} characters`, status: 501, request: { method: "M".repeat(MAX_METHOD_CHARS + 1) } },
    {
      kind: `a head of more than ${MAX_REQUEST_HEAD_BYTES} bytes, every field within its bound`,
      status: 431,
      request: { headers: Array.from({ length: 70 }, (_, i): [string, string] => [`x-wide-${i}`, "w".repeat(MAX_HEADER_VALUE_CHARS - 100)]) },
    },
  ];

  for (const { kind, status, request } of kinds) {
    it(`${kind} is answered ${status} at the edge; the session and the other tunnel stay up`, async () => {
      const sessionId = agent.session.status.sessionId;
      const answer = await rawRequest(attacked, request);
      expect(answer.status, answer.body.slice(0, 300)).toBe(status);
      if (answer.body.startsWith("{")) expect(JSON.parse(answer.body)).toMatchObject({ error_code: "ERR_SVC_3210", status_code: status });
      await expectSessionUntouched(sessionId);
    });
  }

  it(`a head at the bounds (a value of ${MAX_HEADER_VALUE_CHARS} characters, a name of ${MAX_HEADER_NAME_CHARS}) is relayed`, async () => {
    const answer = await rawRequest(attacked, {
      headers: [
        ["x-big", "v".repeat(MAX_HEADER_VALUE_CHARS)],
        [`x-${"n".repeat(MAX_HEADER_NAME_CHARS - 2)}`, "v"],
      ],
    });
    expect(answer.status, answer.body.slice(0, 300)).toBe(200);
    expect(JSON.parse(answer.body)).toMatchObject({ longest: MAX_HEADER_VALUE_CHARS });
  });
});

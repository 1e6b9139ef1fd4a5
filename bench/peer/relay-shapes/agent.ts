/**
 * The agent of bench/peer/relay-shapes: `node --import tsx agent.ts <edge url> <local port>`. Each request the
 * edge names over the WebSocket becomes one keep-alive request to the local service; its response body goes
 * back as a POST to the edge, a request body is fetched from the edge with a GET. Prints "ready" once connected.
 */

import { Agent, request } from "node:http";
import WebSocket from "ws";

const [edgeUrl, localPort] = process.argv.slice(2);
if (!edgeUrl || !localPort) throw new Error("usage: agent.ts <edge url> <local port>");
const edge = new URL(edgeUrl);
const HOP_BY_HOP = new Set(["connection", "keep-alive", "transfer-encoding"]);
const local = new Agent({ keepAlive: true, maxSockets: 64 });
const toEdge = new Agent({ keepAlive: true, maxSockets: 64 });
const ws = new WebSocket(`${edgeUrl.replace(/^http/, "ws")}/connect`, { perMessageDeflate: false });

function open(id: number, method: string, target: string, hasBody: boolean, fixed: boolean): void {
  const outgoing = request({ host: "127.0.0.1", port: Number(localPort), method, path: target, agent: local }, (response) => {
    const headers: Array<[string, string]> = [];
    for (let i = 0; i + 1 < response.rawHeaders.length; i += 2) {
      const name = response.rawHeaders[i]!.toLowerCase();
      if (!HOP_BY_HOP.has(name)) headers.push([name, response.rawHeaders[i + 1]!]);
    }
    const pushHeaders: Record<string, string> = { "x-status": String(response.statusCode ?? 502), "x-head": JSON.stringify(headers) };
    const length = response.headers["content-length"];
    if (length !== undefined) Object.assign(pushHeaders, { "content-length": length, "x-length": length });
    const path = `/push/${id}?fixed=${fixed ? 1 : 0}`;
    const push = request({ host: edge.hostname, port: edge.port, method: "POST", path, agent: toEdge, headers: pushHeaders }, (answer) => answer.resume());
    push.on("error", (error) => process.stderr.write(`relay-shapes agent: push ${id}: ${error.message}\n`));
    response.pipe(push);
  });
  outgoing.on("error", (error) => process.stderr.write(`relay-shapes agent: upstream ${id}: ${error.message}\n`));
  if (!hasBody) return void outgoing.end();
  const pull = request({ host: edge.hostname, port: edge.port, method: "GET", path: `/pull/${id}`, agent: toEdge }, (body) => body.pipe(outgoing));
  pull.on("error", (error) => process.stderr.write(`relay-shapes agent: pull ${id}: ${error.message}\n`));
  pull.end();
}

ws.on("open", () => process.stdout.write("ready\n"));
ws.on("error", (error) => {
  process.stderr.write(`relay-shapes agent: ${error.message}\n`);
  process.exit(1);
});
ws.on("message", (data: Buffer) => {
  const message = JSON.parse(data.toString("utf8")) as { id: number; method: string; target: string; body: boolean; fixed: boolean };
  open(message.id, message.method, message.target, message.body, message.fixed);
});

/**
 * The agent of the relay floor (bench/peer/relay-floor/worker.ts), in its own Node process as Tollgate's agent
 * is: `node --import tsx agent.ts <edge url> <local port>`. Each request from the edge becomes one keep-alive
 * request to the local service; a small answer goes back as one JSON message, a large one (over 64 KiB, or of
 * unknown length) as a head, binary messages as the bytes arrive, and an end. Prints "ready" once connected.
 */

import { Agent, request, type ClientRequest } from "node:http";
import WebSocket from "ws";

const [edgeUrl, localPort] = process.argv.slice(2);
if (!edgeUrl || !localPort) throw new Error("usage: agent.ts <edge url> <local port>");

const SMALL = 64 * 1024;
const HOP_BY_HOP = new Set(["connection", "keep-alive", "transfer-encoding"]);
const local = new Agent({ keepAlive: true, maxSockets: 64 });
const bodies = new Map<number, ClientRequest>();
const ws = new WebSocket(`${edgeUrl.replace(/^http/, "ws")}/connect`, { perMessageDeflate: false, generateMask: (mask: Buffer) => void mask.fill(0) });

function binary(id: number, chunk: Buffer): Buffer {
  const message = Buffer.allocUnsafe(4 + chunk.byteLength);
  message.writeUInt32BE(id, 0);
  chunk.copy(message, 4);
  return message;
}

function open(id: number, method: string, target: string, hasBody: boolean): void {
  const outgoing = request({ host: "127.0.0.1", port: Number(localPort), method, path: target, agent: local }, (response) => {
    const headers: Array<[string, string]> = [];
    for (let i = 0; i + 1 < response.rawHeaders.length; i += 2) {
      const name = response.rawHeaders[i]!.toLowerCase();
      if (!HOP_BY_HOP.has(name)) headers.push([name, response.rawHeaders[i + 1]!]);
    }
    const status = response.statusCode ?? 502;
    const length = Number(response.headers["content-length"] ?? Number.NaN);
    if (length <= SMALL) {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("end", () => ws.send(JSON.stringify({ id, status, headers, body: Buffer.concat(chunks).toString("utf8") })));
      return;
    }
    ws.send(JSON.stringify({ id, status, headers, stream: true }));
    response.on("data", (chunk: Buffer) => ws.send(binary(id, chunk)));
    response.on("end", () => ws.send(JSON.stringify({ id, end: true })));
  });
  outgoing.on("error", (error) => ws.send(JSON.stringify({ id, status: 502, headers: [], body: error.message })));
  if (hasBody) bodies.set(id, outgoing);
  else outgoing.end();
}

ws.on("open", () => process.stdout.write("ready\n"));
ws.on("error", (error) => {
  process.stderr.write(`relay-floor agent: ${error.message}\n`);
  process.exit(1);
});
ws.on("message", (data: Buffer, isBinary: boolean) => {
  if (isBinary) {
    bodies.get(data.readUInt32BE(0))?.write(data.subarray(4));
    return;
  }
  const message = JSON.parse(data.toString("utf8")) as { id: number; method: string; target: string; body: boolean; end?: boolean };
  if (message.end) {
    bodies.get(message.id)?.end();
    bodies.delete(message.id);
    return;
  }
  open(message.id, message.method, message.target, message.body);
});

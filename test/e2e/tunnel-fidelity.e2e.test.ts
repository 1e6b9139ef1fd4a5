/**
 * Tunnel fidelity end to end: the Worker under `wrangler dev` (as `npm start` runs it), the agent in-process
 * and a small local server of this file. A raw HTTP/1.1 client (node:net) sees exactly what a public client
 * gets: the status line, every header, and the body bytes with their framing (Content-Length or chunked).
 */

import { createServer, type IncomingMessage, type Server } from "node:http";
import { connect, type AddressInfo, type Socket } from "node:net";
import { brotliCompressSync, gunzipSync, gzipSync } from "node:zlib";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startAgent, type Agent } from "../../src/agent/agent.ts";
import { parseAgentConfig } from "../../src/agent/settings/load.ts";
import { patternBytes } from "../support/upstream.ts";
import { ngrokRequestClient } from "../agent/support/ngrok-request-client.ts";
import { Edge } from "./support/edge.ts";

// ---- a raw HTTP/1.1 client --------------------------------------------------------------------------

interface RawAnswer {
  readonly statusLine: string;
  readonly status: number;
  /** Header lines in order, names lower-cased. */
  readonly headers: ReadonlyArray<readonly [string, string]>;
  /** The body with any chunk framing removed (content codings untouched). */
  readonly body: Buffer;
  /** How the body was framed on the wire. */
  readonly framing: "content-length" | "chunked" | "none" | "close";
  header(name: string): string | undefined;
}

/**
 * One keep-alive connection to the edge. Each answer is read by its own framing (Content-Length, chunked,
 * or none for HEAD, 204 and 304), so a stray body byte would show as garbage in front of the next answer.
 */
class RawConnection {
  private buffer = Buffer.alloc(0);
  private ended = false;
  private wake: (() => void) | undefined;
  private readonly socket: Socket;

  constructor(port: number) {
    this.socket = connect(port, "127.0.0.1");
    this.socket.on("data", (chunk) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      this.wake?.();
    });
    this.socket.on("end", () => {
      this.ended = true;
      this.wake?.();
    });
    this.socket.on("error", () => {
      this.ended = true;
      this.wake?.();
    });
  }

  /** Sends exactly the given headers plus Host (no Accept-Encoding, no User-Agent unless given). */
  async request(host: string, path: string, { method = "GET", headers = [] as Array<[string, string]> } = {}): Promise<RawAnswer> {
    const lines = [`${method} ${path} HTTP/1.1`, `Host: ${host}`, ...headers.map(([name, value]) => `${name}: ${value}`)];
    this.socket.write(`${lines.join("\r\n")}\r\n\r\n`);
    const headEnd = await this.until(() => (this.buffer.indexOf("\r\n\r\n") >= 0 ? this.buffer.indexOf("\r\n\r\n") : undefined));
    const [statusLine, ...lines2] = this.take(headEnd + 4)
      .subarray(0, headEnd)
      .toString("latin1")
      .split("\r\n");
    if (!statusLine.startsWith("HTTP/1.1 ")) throw new Error(`expected a status line, got ${JSON.stringify(statusLine)}`);
    const fields = lines2.map((line): [string, string] => [line.slice(0, line.indexOf(":")).trim().toLowerCase(), line.slice(line.indexOf(":") + 1).trim()]);
    const status = Number(statusLine.split(" ")[1]);
    const header = (name: string) => fields.find(([key]) => key === name)?.[1];
    const answer = (body: Buffer, framing: RawAnswer["framing"]): RawAnswer => ({ statusLine, status, headers: fields, body, framing, header });
    if (method === "HEAD" || status === 204 || status === 304 || status < 200) return answer(Buffer.alloc(0), "none");
    if (/chunked/i.test(header("transfer-encoding") ?? "")) {
      const parts: Buffer[] = [];
      for (;;) {
        const lineEnd = await this.until(() => (this.buffer.indexOf("\r\n") >= 0 ? this.buffer.indexOf("\r\n") : undefined));
        const size = parseInt(this.take(lineEnd + 2).toString("latin1"), 16);
        await this.until(() => (this.buffer.byteLength >= size + 2 ? true : undefined));
        const chunk = this.take(size + 2);
        if (size === 0) return answer(Buffer.concat(parts), "chunked");
        parts.push(chunk.subarray(0, size));
      }
    }
    const length = header("content-length");
    if (length !== undefined) {
      await this.until(() => (this.buffer.byteLength >= Number(length) ? true : undefined));
      return answer(this.take(Number(length)), "content-length");
    }
    await this.until(() => (this.ended ? true : undefined));
    return answer(this.take(this.buffer.byteLength), "close");
  }

  close(): void {
    this.socket.destroy();
  }

  private take(count: number): Buffer {
    const taken = this.buffer.subarray(0, count);
    this.buffer = this.buffer.subarray(count);
    return taken;
  }

  private async until<T>(ready: () => T | undefined): Promise<T> {
    for (;;) {
      const value = ready();
      if (value !== undefined) return value;
      if (this.ended) throw new Error(`the connection ended; ${this.buffer.byteLength} bytes unread`);
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }
}

// ---- the local server ---------------------------------------------------------------------------------

const HTML = Buffer.from("<html><p>hello</p></html>\n"); // 26 bytes
const BIG = patternBytes(600 * 1024);
const GZIPPED = gzipSync(Buffer.from(`<html>${"compressed by the local server ".repeat(200)}</html>`));
const BROTLI = brotliCompressSync(Buffer.from("/* compressed by the local server */ ".repeat(200)));

let server: Server;
/** Request heads the local server received, by path. */
const received = new Map<string, IncomingMessage["rawHeaders"]>();

function startLocal(): Promise<number> {
  server = createServer((request, response) => {
    const path = new URL(request.url ?? "/", "http://local").pathname;
    received.set(path, request.rawHeaders);
    request.resume();
    switch (path) {
      case "/page.html":
        response.writeHead(200, { "content-type": "text/html", "content-length": String(HTML.byteLength) });
        return response.end(request.method === "HEAD" ? undefined : HTML);
      case "/blob":
        response.writeHead(200, { "content-type": "application/octet-stream", "content-length": String(HTML.byteLength) });
        return response.end(HTML);
      case "/big":
        response.writeHead(200, { "content-type": "application/octet-stream", "content-length": String(BIG.byteLength) });
        return response.end(BIG);
      case "/text":
        response.writeHead(200, { "content-type": "text/plain", "content-length": String(HTML.byteLength) });
        return response.end(HTML);
      case "/gzipped.json":
        response.writeHead(200, { "content-type": "application/json", "content-encoding": "gzip", "content-length": String(GZIPPED.byteLength) });
        return response.end(GZIPPED);
      case "/brotli.js":
        response.writeHead(200, { "content-type": "application/javascript", "content-encoding": "br", "content-length": String(BROTLI.byteLength) });
        return response.end(BROTLI);
      case "/no-content":
        response.writeHead(204, { "x-local": "204" });
        return response.end();
      case "/not-modified":
        response.writeHead(304, { etag: '"v1"', "x-local": "304" });
        return response.end();
      default:
        response.writeHead(200, { "content-type": "application/json" });
        return response.end(JSON.stringify(request.rawHeaders));
    }
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve((server.address() as AddressInfo).port)));
}

// ---- setup ----------------------------------------------------------------------------------------------

let edge: Edge;
let agent: Agent;
let host: string;

beforeAll(async () => {
  const [started, port] = await Promise.all([Edge.start(), startLocal()]);
  edge = started;
  const parsed = parseAgentConfig({ server_addr: edge.url, web_addr: "127.0.0.1:0" });
  if (!parsed.ok) throw new Error("bad test config");
  agent = await startAgent({ config: parsed.config, backoff: { initialMs: 100, maxMs: 1000 } });
  await agent.ready;
  const { public_url } = await ngrokRequestClient(agent.apiUrl!).startTunnel({ name: "fidelity", addr: port });
  host = new URL(public_url).host;
});

afterAll(async () => {
  await agent?.stop();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  await edge?.dispose();
});

/** The raw request head the local server received for a path. */
const localHeaders = (path: string) => received.get(path) ?? [];
/** Header values a local request carried under a name (raw names compared case-insensitively). */
const valuesOf = (raw: string[], name: string) => raw.filter((_, i) => i % 2 === 1 && raw[i - 1].toLowerCase() === name);

let connection: RawConnection;
beforeEach(() => {
  connection = new RawConnection(edge.port);
});
afterEach(() => connection.close());

describe("response framing and bytes", () => {
  it("keeps the local server's Content-Length and bytes, for a small answer and a streamed 600 KiB one", async () => {
    for (const [path, body] of [
      ["/blob", HTML],
      ["/text", HTML],
      ["/big", BIG],
    ] as const) {
      const answer = await connection.request(host, path);
      expect(answer.status).toBe(200);
      expect(answer.framing).toBe("content-length");
      expect(answer.header("content-length")).toBe(String(body.byteLength));
      expect(answer.header("transfer-encoding")).toBeUndefined();
      expect(answer.body.equals(body)).toBe(true);
    }
  });

  it("passes a body the local server compressed byte for byte, with its Content-Encoding and Content-Length", async () => {
    for (const [path, acceptEncoding, encoding, body] of [
      ["/gzipped.json", "gzip", "gzip", GZIPPED],
      ["/brotli.js", "br", "br", BROTLI],
    ] as const) {
      const answer = await connection.request(host, path, { headers: [["Accept-Encoding", acceptEncoding]] });
      expect(answer.header("content-encoding")).toBe(encoding);
      expect(answer.framing).toBe("content-length");
      expect(answer.header("content-length")).toBe(String(body.byteLength));
      expect(answer.body.equals(body)).toBe(true);
      expect(valuesOf(localHeaders(path), "accept-encoding")).toEqual([acceptEncoding]);
    }
  });

  it("answers HEAD with the local server's Content-Length and no body", async () => {
    const head = await connection.request(host, "/page.html", { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.header("content-length")).toBe(String(HTML.byteLength));
    expect(head.header("transfer-encoding")).toBeUndefined();
    // a stray body byte would sit in front of the next answer on this connection and break its status line
    const next = await connection.request(host, "/blob");
    expect(next.body.equals(HTML)).toBe(true);
  });

  it("answers 204 and 304 with no body and no length or chunk framing", async () => {
    const noContent = await connection.request(host, "/no-content");
    expect(noContent.status).toBe(204);
    expect(noContent.header("x-local")).toBe("204");
    const notModified = await connection.request(host, "/not-modified", { headers: [["If-None-Match", '"v1"']] });
    expect(notModified.status).toBe(304);
    expect(notModified.header("etag")).toBe('"v1"');
    for (const answer of [noContent, notModified]) {
      expect(answer.header("transfer-encoding")).toBeUndefined();
      expect(answer.header("content-length")).toBeUndefined();
    }
    const next = await connection.request(host, "/blob");
    expect(next.body.equals(HTML)).toBe(true);
  });
});

describe("request headers", () => {
  it("hands the local server the client's Accept-Encoding, or none when it sent none, and the inspector shows the same", async () => {
    await connection.request(host, "/echo-none");
    expect(valuesOf(localHeaders("/echo-none"), "accept-encoding")).toEqual([]);
    await connection.request(host, "/echo-some", { headers: [["Accept-Encoding", "deflate;q=0.5, zstd"]] });
    expect(valuesOf(localHeaders("/echo-some"), "accept-encoding")).toEqual(["deflate;q=0.5, zstd"]);

    const captured = await fetch(`${agent.apiUrl}/api/requests/http?limit=50`).then(
      (response) => response.json() as Promise<{ requests: Array<{ request: { uri: string; headers: Record<string, string[]> } }> }>,
    );
    const shown = (uri: string) => captured.requests.find((entry) => entry.request.uri === uri)!.request.headers;
    expect(Object.keys(shown("/echo-none")).map((name) => name.toLowerCase())).not.toContain("accept-encoding");
    expect(Object.entries(shown("/echo-some")).find(([name]) => name.toLowerCase() === "accept-encoding")?.[1]).toEqual(["deflate;q=0.5, zstd"]);
  });
});

describe("what the platform changes (Cloudflare's behaviour, as wrangler dev reproduces it)", () => {
  it("compresses a compressible type the local server sent uncompressed when the client accepts gzip", async () => {
    const answer = await connection.request(host, "/text", { headers: [["Accept-Encoding", "gzip"]] });
    expect(valuesOf(localHeaders("/text"), "accept-encoding")).toEqual(["gzip"]);
    expect(answer.header("content-encoding")).toBe("gzip");
    expect(answer.header("content-length")).toBeUndefined();
    expect(gunzipSync(answer.body).equals(HTML)).toBe(true);
  });

  it("sends text/html chunked under wrangler dev (its dev proxy rewrites HTML); the bytes are the local server's", async () => {
    const answer = await connection.request(host, "/page.html");
    expect(answer.header("content-type")).toBe("text/html");
    expect(answer.framing).toBe("chunked");
    expect(answer.body.equals(HTML)).toBe(true);
  });
});

/**
 * The LLM routes of the test upstream (test/support/upstream.ts), answering as an LLM API does, for the tests of
 * settled costs.
 *
 * /completion?total=N&pad=B: a JSON completion of B bytes of text whose `usage.total_tokens` is N, written in
 * pieces without a content-length (chunked, as a model streams it out), the usage last as OpenAI's is.
 * /header?total=N: plain text carrying N in x-usage-tokens.
 * /held?total=N: the completion's first part at once, the rest (with the usage) only after a request to /release.
 *
 * Streamed (text/event-stream), as the model APIs stream:
 * /sse?total=N&pad=K[&style=anthropic]: K content events, then the usage as OpenAI sends it (a last chunk with
 *   usage.total_tokens N, then [DONE]) or as Anthropic does (message_start with 10 input tokens, message_delta with
 *   N - 10 output tokens, message_stop).
 * /sse-held?total=N: one content event at once, the usage only after a request to /release.
 * /sse-endless: content events until the connection closes; /sse-endless-closed answers how many such streams the
 *   gateway has closed so far.
 * /sse-big: one event of 10 MB, then a usage event of total 1. /sse-garbage: 64 KiB of binary noise.
 */

import type { IncomingMessage, ServerResponse } from "node:http";

/** Completions /held is holding back, released by /release. */
const held: (() => void)[] = [];
/** Endless streams whose connection the gateway closed. */
let endlessClosed = 0;

const chunk = (content: string) =>
  `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"${content}"}}],"usage":null}\n\n`;

/** Writes `text`, waiting while the socket's buffer is full; false once the connection is closed. */
async function write(response: ServerResponse, text: string): Promise<boolean> {
  if (response.destroyed) return false;
  if (!response.write(text)) {
    await new Promise<void>((resolve) => {
      const done = () => {
        response.off("drain", done);
        response.off("close", done);
        resolve();
      };
      response.on("drain", done);
      response.on("close", done);
    });
  }
  return !response.destroyed;
}

async function stream(path: string, url: URL, response: ServerResponse): Promise<void> {
  const total = Number(url.searchParams.get("total") ?? "0");
  response.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" });
  if (path === "/sse-endless") {
    response.once("close", () => (endlessClosed += 1));
    for (let index = 0; await write(response, chunk(`word ${index} `.repeat(20))); index++);
    return;
  }
  if (path === "/sse-big") {
    await write(response, 'data: {"text":"');
    for (let sent = 0; sent < 10 * 1024 * 1024; sent += 65_536) if (!(await write(response, "b".repeat(65_536)))) return;
    response.end('"}\n\ndata: {"usage":{"total_tokens":1}}\n\n');
    return;
  }
  if (path === "/sse-garbage") {
    const noise = Buffer.alloc(65_536, 0).map((_, index) => (index * 7919 + 13) % 256);
    response.end(noise);
    return;
  }
  if (path === "/sse-held") {
    await write(response, chunk("Hello"));
    await new Promise<void>((resolve) => held.push(resolve));
    response.end(`data: {"id":"chatcmpl-1","choices":[],"usage":{"total_tokens":${total}}}\n\ndata: [DONE]\n\n`);
    return;
  }
  const pad = Number(url.searchParams.get("pad") ?? "3");
  if (url.searchParams.get("style") === "anthropic") {
    await write(response, `event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":10,"output_tokens":1}}}\n\n`);
    for (let index = 0; index < pad; index++) {
      await write(response, `event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"w${index}"}}\n\n`);
    }
    const delta = `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":${total - 10}}}`;
    response.end(`event: message_delta\ndata: ${delta}\n\nevent: message_stop\ndata: {"type":"message_stop"}\n\n`);
    return;
  }
  for (let index = 0; index < pad; index++) await write(response, chunk(`w${index} `));
  response.end(`data: {"id":"chatcmpl-1","choices":[],"usage":{"prompt_tokens":1,"total_tokens":${total}}}\n\ndata: [DONE]\n\n`);
}

/** Paths the LLM routes answer (exactly; any other path is the rest of the upstream's). */
export function isUsagePath(path: string): boolean {
  return path.startsWith("/sse") || ["/completion", "/header", "/held", "/release"].includes(path);
}

/** Answers a request whose path isUsagePath. */
export async function answerUsage(request: IncomingMessage, response: ServerResponse): Promise<void> {
  for await (const _ of request);
  const url = new URL(request.url ?? "/", "http://upstream");
  const total = Number(url.searchParams.get("total") ?? "0");
  if (url.pathname === "/sse-endless-closed") {
    response.end(String(endlessClosed));
    return;
  }
  if (url.pathname.startsWith("/sse")) return stream(url.pathname, url, response);
  if (url.pathname === "/release") {
    for (const release of held.splice(0)) release();
    response.end("released");
    return;
  }
  if (url.pathname === "/held") {
    response.writeHead(200, { "content-type": "application/json" });
    response.write(`{"id":"cmpl-1",`);
    await new Promise<void>((resolve) => held.push(resolve));
    response.end(`"usage":{"total_tokens":${total}}}`);
    return;
  }
  if (url.pathname === "/header") {
    response.writeHead(200, { "content-type": "text/plain", "x-usage-tokens": String(total) });
    response.end("ok");
    return;
  }
  const pad = Number(url.searchParams.get("pad") ?? "16");
  response.writeHead(200, { "content-type": "application/json" });
  response.write(`{"id":"cmpl-1","choices":[{"text":"`);
  const piece = "a".repeat(4096);
  for (let sent = 0; sent < pad; sent += piece.length) {
    if (!response.write(piece.slice(0, Math.min(piece.length, pad - sent)))) await new Promise((resolve) => response.once("drain", resolve));
  }
  response.end(`"}],"usage":{"prompt_tokens":1,"completion_tokens":${total - 1},"total_tokens":${total}}}`);
}

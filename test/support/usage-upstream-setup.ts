/**
 * A local upstream that answers as an LLM API does, for the worker tests of settled costs; its port reaches tests
 * via inject("usageUpstreamPort").
 *
 * /completion?total=N&pad=B: a JSON completion of B bytes of text whose `usage.total_tokens` is N, written in
 * pieces without a content-length (chunked, as a model streams it out), the usage last as OpenAI's is.
 * /header?total=N: plain text carrying N in x-usage-tokens.
 * /held?total=N: the completion's first part at once, the rest (with the usage) only after a request to /release.
 */

import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { TestProject } from "vitest/node";

import type {} from "../worker/provided.d.ts";

/** Completions /held is holding back, released by /release. */
const held: (() => void)[] = [];

async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
  for await (const _ of request);
  const url = new URL(request.url ?? "/", "http://upstream");
  const total = Number(url.searchParams.get("total") ?? "0");
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

export default async function setup(project: TestProject) {
  const server = createServer((request, response) => {
    handle(request, response).catch((error) => {
      response.statusCode = 500;
      response.end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  project.provide("usageUpstreamPort", (server.address() as AddressInfo).port);
  return () => new Promise<void>((resolve) => server.close(() => resolve()));
}

/**
 * The routes of the test upstream (test/support/upstream.ts) that keep state between requests: switchable
 * failures for circuit breakers, stored JWKS documents, and the TCP echo's open connections.
 */

import type { IncomingMessage, ServerResponse } from "node:http";

/** Switchable upstreams for circuit breaker tests: name → failing?, and how often each was called. */
const flaky = new Map<string, { failing: boolean; hits: number }>();
/** JWKS documents for jwt-validation tests: PUT /jwks/<name> stores the body, GET serves it and counts the GETs. */
const jwksDocuments = new Map<string, { body: string; hits: number }>();

function flakyState(name: string) {
  let state = flaky.get(name);
  if (!state) flaky.set(name, (state = { failing: false, hits: 0 }));
  return state;
}

async function readText(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * /control/<name>/(fail|recover|hits) switches and reports; /flaky/<name> answers 500 while failing, else 200;
 * /jwks/<name> a stored JWKS (PUT stores it; x-jwks-hits: the GETs so far; HEAD reads it without counting);
 * /tcp-connections the TCP echo's open connections. False when the path is none of these.
 */
export async function answerSwitch(request: IncomingMessage, response: ServerResponse, url: URL, tcpConnections: () => number): Promise<boolean> {
  const control = url.pathname.match(/^\/control\/([\w-]+)\/(fail|recover|hits)$/);
  if (control) {
    const state = flakyState(control[1]!);
    if (control[2] !== "hits") state.failing = control[2] === "fail";
    response.writeHead(200, { "content-type": "application/json" });
    response.end(JSON.stringify(state));
    return true;
  }
  const jwks = url.pathname.match(/^\/jwks\/([\w-]+)$/);
  if (jwks) {
    const document = jwksDocuments.get(jwks[1]!) ?? { body: '{"keys":[]}', hits: 0 };
    if (request.method === "PUT") document.body = await readText(request);
    else if (request.method === "GET") document.hits++;
    jwksDocuments.set(jwks[1]!, document);
    response.writeHead(200, { "content-type": "application/json", "x-jwks-hits": String(document.hits) });
    response.end(document.body);
    return true;
  }
  if (url.pathname === "/tcp-connections") {
    response.writeHead(200, { "content-type": "application/json" });
    response.end(JSON.stringify({ open: tcpConnections() }));
    return true;
  }
  const flakyName = url.pathname.match(/\/flaky\/([\w-]+)$/);
  if (flakyName) {
    const state = flakyState(flakyName[1]!);
    state.hits++;
    response.writeHead(state.failing ? 500 : 200, { "content-type": "text/plain" });
    response.end(state.failing ? "failing" : "ok");
    return true;
  }
  return false;
}

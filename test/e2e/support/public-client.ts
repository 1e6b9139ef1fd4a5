/**
 * A public client of tunnel URLs. Node's resolver does not map *.localhost to loopback (curl and browsers
 * do), so requests go to the edge's address with the tunnel's Host header.
 */

import { request as httpRequest, type IncomingMessage } from "node:http";

export interface PublicAnswer {
  status: number;
  headers: IncomingMessage["headers"];
  body: Buffer;
}

export interface PublicRequest {
  method?: string;
  headers?: Record<string, string>;
  body?: Buffer | string;
}

/**
 * Longest the connection may go without a byte either way before the request fails naming its path: a request that
 * hangs then says which one did, instead of the test running into its own time limit with no word of where.
 */
const IDLE_LIMIT_MS = 30_000;

/** Sends the request and hands back the response as it starts (the body unread). */
export function openPublic(edgeUrl: string, publicUrl: string, path: string, init: PublicRequest = {}): Promise<IncomingMessage> {
  const edge = new URL(edgeUrl);
  const target = new URL(path, publicUrl);
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      {
        host: edge.hostname,
        port: edge.port,
        method: init.method ?? "GET",
        path: target.pathname + target.search,
        headers: { ...init.headers, host: target.host },
        agent: false,
      },
      resolve,
    );
    request.setTimeout(IDLE_LIMIT_MS, () =>
      request.destroy(new Error(`${init.method ?? "GET"} ${target.href}: no byte from the edge for ${IDLE_LIMIT_MS / 1000} s`)),
    );
    request.on("error", reject);
    request.end(init.body);
  });
}

export async function fetchPublic(edgeUrl: string, publicUrl: string, path: string, init: PublicRequest = {}): Promise<PublicAnswer> {
  const response = await openPublic(edgeUrl, publicUrl, path, init);
  const chunks: Buffer[] = [];
  for await (const chunk of response) chunks.push(chunk as Buffer);
  return { status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks) };
}

export function jsonOf(answer: PublicAnswer): any {
  return JSON.parse(answer.body.toString("utf8"));
}

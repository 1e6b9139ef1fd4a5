/**
 * A large response body sent as one POST to the edge (protocol.ts, "Body channels"): the local response is
 * piped into it, so TCP's backpressure on both sockets paces it and nothing waits here. The edge answers 204
 * once the public client has taken all of it; anything else (or a broken connection) ends the stream.
 */

import http from "node:http";
import https from "node:https";
import { parseContentLength, responseHasNoBody } from "../../relay/http-semantics.ts";
import { BODY_CHANNEL_MIN_BYTES, ResetCode } from "../../relay/protocol.ts";
import type { AgentStream } from "./agent-stream.ts";
import type { BodyChannelTarget } from "./edge-endpoints.ts";

/** Most of an edge's refusal of a body channel read, and of its reason kept for the reset message. */
const REFUSAL_BYTES = 4096;
const REFUSAL_REASON_CHARS = 300;

export interface ChannelPlan {
  readonly target: BodyChannelTarget;
  readonly length: number;
}

/** The channel a response's body goes through: a large body of known length the edge takes, else undefined (frames). */
export function channelFor(target: BodyChannelTarget | undefined, response: http.IncomingMessage, status: number, method: string): ChannelPlan | undefined {
  if (!target || status < 200 || responseHasNoBody(status, method)) return undefined;
  const length = parseContentLength(response.headers["content-length"]);
  return length !== undefined && length >= BODY_CHANNEL_MIN_BYTES && length <= target.maxBytes ? { target, length } : undefined;
}

export interface ChannelSender {
  readonly connections: { readonly http: http.Agent; readonly https: https.Agent };
  /** The edge took the whole body. */
  delivered(stream: AgentStream): void;
  reset(stream: AgentStream, code: string, message: string): void;
}

export function sendThroughChannel(stream: AgentStream, response: http.IncomingMessage, plan: ChannelPlan, sender: ChannelSender): http.ClientRequest {
  const url = new URL(`${plan.target.url}&stream=${stream.id}`);
  const secure = url.protocol === "https:";
  const post = (secure ? https : http).request(url, {
    method: "POST",
    headers: {
      authorization: `Bearer ${plan.target.token}`,
      "content-type": "application/octet-stream",
      "content-length": String(plan.length),
      "user-agent": plan.target.userAgent,
    },
    agent: secure ? sender.connections.https : sender.connections.http,
  });
  post.on("response", (answer) => {
    const chunks: Buffer[] = [];
    let kept = 0;
    answer.on("data", (chunk: Buffer) => {
      if (kept < REFUSAL_BYTES) chunks.push(chunk.subarray(0, REFUSAL_BYTES - kept));
      kept += chunk.byteLength;
    });
    answer.on("end", () => {
      if (stream.closed) return;
      if (answer.statusCode === 204) return sender.delivered(stream);
      const text = Buffer.concat(chunks).toString("utf8");
      let why = text.trim();
      try {
        const msg = (JSON.parse(text) as { msg?: unknown }).msg;
        if (typeof msg === "string") why = msg;
      } catch {
        // not the edge's JSON error envelope: its text as it is
      }
      // a reset's message is at most 4096 characters (protocol.ts): the edge's reason is cut well inside it
      why = why.slice(0, REFUSAL_REASON_CHARS);
      sender.reset(stream, ResetCode.cancelled, `the edge did not take the response body (HTTP ${answer.statusCode}): ${why}`);
    });
    answer.on("error", () => undefined);
  });
  post.on("error", (error) => {
    if (!stream.closed) sender.reset(stream, ResetCode.cancelled, `the response body's channel to the edge failed: ${error.message}`);
  });
  response.on("data", (chunk: Buffer) => {
    if (!stream.closed) stream.observer.onResponseBody?.(chunk);
  });
  response.pipe(post);
  return post;
}

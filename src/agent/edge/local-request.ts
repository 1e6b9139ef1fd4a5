/** A stream's HTTP request to the tunnel's local address: its connection and answer timeouts, its errors as resets, its body in order. */

import http from "node:http";
import https from "node:https";
import type { Frame, FrameOf } from "../../relay/frames.ts";
import { ResetCode } from "../../relay/protocol.ts";
import { UNREACHABLE, type AgentStream } from "./agent-stream.ts";
import { localConnections } from "./connection-limits.ts";

export interface LocalRequestHooks {
  readonly connectTimeoutMs: number;
  readonly responseTimeoutMs: number;
  send(frame: Frame): void;
  reset(stream: AgentStream, code: string, message: string): void;
  /** The local service's response head arrived. */
  respond(response: http.IncomingMessage): void;
}

export function openLocalRequest(stream: AgentStream, head: FrameOf<"request_head">, headers: Array<[string, string]>, hooks: LocalRequestHooks): void {
  const url = stream.tunnel.url;
  const secure = url.protocol === "https:";
  const request = (secure ? https : http).request({
    protocol: url.protocol,
    hostname: url.hostname.replace(/^\[|\]$/g, ""),
    port: url.port || (secure ? 443 : 80),
    method: head.method,
    path: head.target,
    headers: headers.flat(),
    setHost: false,
    agent: secure ? localConnections.https : localConnections.http,
    // Local development servers commonly use self-signed certificates.
    rejectUnauthorized: false,
  });
  stream.request = request;
  stream.method = head.method;
  request.on("socket", (socket) => {
    if (!socket.connecting) return;
    const timer = setTimeout(() => {
      hooks.reset(stream, ResetCode.upstreamTimeout, `could not connect to ${url.origin} within ${hooks.connectTimeoutMs / 1000} s`);
    }, hooks.connectTimeoutMs);
    stream.timers.push(timer);
    socket.once("connect", () => clearTimeout(timer));
  });
  stream.timers.push(
    setTimeout(() => {
      if (!stream.responded) hooks.reset(stream, ResetCode.upstreamTimeout, `${url.origin} did not answer within ${hooks.responseTimeoutMs / 1000} s`);
    }, hooks.responseTimeoutMs),
  );
  request.on("error", (error: NodeJS.ErrnoException) => {
    if (stream.closed) return;
    if (!stream.responded && error.code && UNREACHABLE.has(error.code)) {
      hooks.reset(stream, ResetCode.upstreamUnreachable, `could not connect to ${url.origin}: ${error.message}`);
    } else {
      hooks.reset(stream, ResetCode.upstreamError, `the request to ${url.origin} failed: ${error.message}`);
    }
  });
  request.on("response", hooks.respond);
  stream.sink = {
    data: (bytes) => {
      stream.observer.onRequestBody?.(bytes);
      request.write(bytes, () => {
        const window = stream.core.receive.acknowledge(bytes.byteLength);
        if (window && !stream.closed) hooks.send(window);
      });
    },
    end: () => {
      stream.observer.onRequestEnd?.();
      request.end();
    },
  };
}

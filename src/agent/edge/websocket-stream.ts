/** A stream whose public client asked for a WebSocket: the agent opens one to the local service and relays its messages. */

import { closeReason } from "../../close-reason.ts";
import type { Frame, FrameOf } from "../../relay/frames.ts";
import { headerListProblem, MAX_STATUS_TEXT_CHARS } from "../../relay/head-bounds.ts";
import { sendableCloseCode } from "../../relay/http-semantics.ts";
import { ResetCode } from "../../relay/protocol.ts";
import { UNREACHABLE, type AgentStream } from "./agent-stream.ts";
import { connectLocalWebSocket } from "./local-websocket.ts";

export interface WebSocketRelay {
  send(frame: Frame): void;
  /** The stream's response is complete: its queued body and end may go. */
  pump(stream: AgentStream): void;
  reset(stream: AgentStream, code: string, message: string): void;
  close(stream: AgentStream): void;
}

export function openWebSocket(
  stream: AgentStream,
  head: FrameOf<"request_head">,
  headers: Array<[string, string]>,
  relay: WebSocketRelay,
  handshakeTimeoutMs: number,
): void {
  const origin = stream.tunnel.url.origin;
  stream.socket = connectLocalWebSocket(
    stream.tunnel.url,
    head.target,
    headers,
    {
      open: (responseHeaders) => {
        if (stream.closed) return stream.socket?.terminate();
        const problem = headerListProblem(responseHeaders);
        if (problem) return relay.reset(stream, ResetCode.upstreamError, `the WebSocket answer from ${origin} cannot be relayed: ${problem}`);
        stream.responded = true;
        relay.send({ type: "response_head", stream: stream.id, status: 101, status_text: "Switching Protocols", headers: responseHeaders });
        stream.observer.onResponseHead?.({ status: 101, statusText: "Switching Protocols", headers: responseHeaders, httpVersion: "1.1" });
      },
      message: (bytes, binary) => {
        if (!stream.closed) relay.send({ type: "ws_message", stream: stream.id, binary, bytes });
      },
      close: (code, reason) => {
        if (stream.closed) return;
        relay.send({ type: "ws_close", stream: stream.id, code: sendableCloseCode(code), reason: closeReason(reason) });
        stream.observer.onResponseEnd?.(stream.elapsedNs());
        relay.close(stream);
      },
      refused: (status, reason, responseHeaders, body) => {
        if (stream.closed) return;
        const problem = headerListProblem(responseHeaders);
        if (problem) return relay.reset(stream, ResetCode.upstreamError, `the answer from ${origin} cannot be relayed: ${problem}`);
        const statusText = reason.slice(0, MAX_STATUS_TEXT_CHARS);
        stream.responded = true;
        relay.send({ type: "response_head", stream: stream.id, status, status_text: statusText, headers: responseHeaders });
        stream.observer.onResponseHead?.({ status, statusText, headers: responseHeaders, httpVersion: "1.1" });
        stream.out.push(body);
        stream.out.finish();
        relay.pump(stream);
      },
      failed: (error) => {
        if (stream.closed) return;
        const unreachable = error.code !== undefined && UNREACHABLE.has(error.code);
        relay.reset(stream, unreachable ? ResetCode.upstreamUnreachable : ResetCode.upstreamError, `could not open a WebSocket to ${origin}: ${error.message}`);
      },
    },
    { handshakeTimeoutMs },
  );
}

/**
 * Sends one request to a tunnel's local address as if it had come through the edge: same forwarding,
 * timeouts and taps (so request capture records it, marked `replay`). For replaying captured requests.
 */

import type { Frame, FrameOf } from "../../relay/frames.ts";
import { DataSequence } from "../../relay/framing.ts";
import { LocalForwarder, type LocalTunnel } from "./local-forwarder.ts";

export interface LocalRequest {
  readonly method: string;
  /** Path and query. */
  readonly target: string;
  readonly headers: ReadonlyArray<readonly [string, string]>;
  readonly body?: Uint8Array;
  /** Shown as the client address (X-Forwarded-For); default none. */
  readonly remoteAddr?: string;
}

export type LocalAnswer =
  | { ok: true; status: number; statusText: string; headers: Array<[string, string]>; body: Uint8Array }
  | { ok: false; code: string; message: string };

const STREAM = 1;

export function sendToLocal(tunnel: LocalTunnel, request: LocalRequest, options: { responseTimeoutMs?: number } = {}): Promise<LocalAnswer> {
  return new Promise((resolve) => {
    let head: FrameOf<"response_head"> | undefined;
    const chunks: Uint8Array[] = [];
    const forwarder: LocalForwarder = new LocalForwarder({
      replay: true,
      lookup: () => tunnel,
      sessionKey: () => `replay-${Date.now()}`,
      responseTimeoutMs: options.responseTimeoutMs,
      send: (frame: Frame) => {
        switch (frame.type) {
          case "response_head":
            head = frame;
            return;
          case "data":
            chunks.push(frame.bytes);
            // the body is taken as it comes: give the window straight back
            queueMicrotask(() => forwarder.onFrame({ type: "window", stream: STREAM, increment: frame.bytes.byteLength }));
            return;
          case "end": {
            const length = chunks.reduce((sum, chunk) => sum + chunk.byteLength, 0);
            const body = new Uint8Array(length);
            let offset = 0;
            for (const chunk of chunks) {
              body.set(chunk, offset);
              offset += chunk.byteLength;
            }
            resolve({ ok: true, status: head!.status, statusText: head!.status_text ?? "", headers: head!.headers, body });
            return;
          }
          case "reset":
            resolve({ ok: false, code: frame.code, message: frame.message });
            return;
          default:
            return; // window acks for the request body: it is all sent already
        }
      },
    });
    forwarder.onFrame({
      type: "request_head",
      stream: STREAM,
      tunnel_id: tunnel.id,
      method: request.method,
      target: request.target,
      headers: request.headers.map(([name, value]) => [name, value]),
      client_addr: request.remoteAddr ?? "",
      scheme: "http",
    });
    const sequence = new DataSequence(STREAM);
    if (request.body) for (const frame of sequence.frames(request.body)) forwarder.onFrame(frame);
    forwarder.onFrame(sequence.end());
  });
}

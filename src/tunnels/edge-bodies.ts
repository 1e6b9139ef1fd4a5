/** Bodies at the edge in workerd's streams: reading a public request's, building the public response, piping a body channel. */

import type { ChannelIo } from "../relay/body-channel-rendezvous.ts";
import { DATA_FRAME_HEADROOM, encodeDataInPlace } from "../relay/frame-codec.ts";
import type { Frame, FrameOf } from "../relay/frames.ts";
import type { RelayStream } from "../relay/stream-table.ts";
import { HOP_BY_HOP_HEADERS } from "../relay/http-semantics.ts";

/**
 * Reads a request body a frame's worth (`size`) at a time where the runtime allows it: a byte stream read into a
 * buffer of that size hands over what has arrived, up to that, where its default reader hands over the
 * runtime's own small pieces (4 KiB each for a request body in workerd: thousands of data frames and messages
 * per upload, and bench:tunnel's uploads crawled; figures: docs/benchmark.md#figures-behind-constants-in-the-code). Each read gets a fresh
 * buffer: a data frame sent uncopied may still be held by the runtime after `WebSocket.send` returns (reading
 * into two buffers in turn corrupted concurrent uploads in test/e2e/inspect.e2e.test.ts). A byte stream is read
 * DATA_FRAME_HEADROOM bytes into its buffer (`headroom`), so its data frame is encoded there and sent
 * uncopied: copying each 64 KiB into a message was a large share of workerd's time in bench:tunnel-profile's
 * uploads (docs/benchmark.md#figures-behind-constants-in-the-code).
 */
export function bodyReader(
  body: ReadableStream<Uint8Array>,
  size: number,
): {
  reader: ReadableStreamBYOBReader | ReadableStreamDefaultReader<Uint8Array>;
  read(): Promise<ReadableStreamReadResult<Uint8Array>>;
  headroom: boolean;
} {
  let byob: ReadableStreamBYOBReader | undefined;
  try {
    byob = body.getReader({ mode: "byob" });
  } catch {
    // not a byte stream (a stream made in JavaScript): its chunks come as they were enqueued
  }
  if (byob) {
    const reader = byob;
    const read = () => reader.read(new Uint8Array(DATA_FRAME_HEADROOM + size).subarray(DATA_FRAME_HEADROOM)) as Promise<ReadableStreamReadResult<Uint8Array>>;
    return { reader, read, headroom: true };
  }
  const reader = body.getReader();
  return { reader, read: () => reader.read(), headroom: false };
}

/**
 * Sends a public request's body to the agent in data frames of up to `largest` bytes, within the agent's
 * window, then the end; `broke` hears of a body that broke off. Stops when the stream closes.
 */
export async function sendRequestBody(
  stream: RelayStream & { readonly request: { readonly body: ReadableStream<Uint8Array> | null }; requestReader?: { cancel(): Promise<void> } },
  largest: number,
  out: { send(frame: Frame): void; sendEncoded(encoded: Uint8Array): void },
  broke: (error: Error) => void,
): Promise<void> {
  const body = stream.request.body;
  if (body) {
    const reader = bodyReader(body, largest);
    stream.requestReader = reader.reader;
    // Only a read's first frame has the headroom before it free; later ones share the bytes still queued.
    const emit = (frame: FrameOf<"data">, offset: number) => (reader.headroom && offset === 0 ? out.sendEncoded(encodeDataInPlace(frame)) : out.send(frame));
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        if (!(await stream.sendChunk(value, largest, emit))) return;
      }
    } catch (error) {
      broke(error as Error);
      return;
    }
  }
  if (!stream.closed) out.send(stream.core.send.end());
}

/** The public response's headers from the agent's head: hop-by-hop ones and ones the runtime refuses are dropped. */
export function responseHeaders(head: ReadonlyArray<readonly [string, string]>): Headers {
  const headers = new Headers();
  for (const [name, value] of head) {
    if (HOP_BY_HOP_HEADERS.has(name.toLowerCase())) continue;
    try {
      headers.append(name, value);
    } catch {
      // a header the runtime refuses (invalid characters) is dropped rather than failing the response
    }
  }
  return headers;
}

export function concat(chunks: readonly Uint8Array[]): Uint8Array {
  if (chunks.length === 1) return chunks[0];
  const out = new Uint8Array(chunks.reduce((sum, chunk) => sum + chunk.byteLength, 0));
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}

/** A body channel's I/O in workerd: its timers, and the POST's body piped into the client's response. */
export function workerdChannelIo(waitMs: () => number): ChannelIo<ReadableStream<Uint8Array>, WritableStream<Uint8Array>> {
  return {
    timer: { set: (run, ms) => setTimeout(run, ms), clear: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>) },
    waitMs,
    pipe(body, sink) {
      const stop = new AbortController();
      return { done: body.pipeTo(sink, { signal: stop.signal }), stop: (reason) => stop.abort(reason) };
    },
    discard: (body) => void body.cancel().catch(() => undefined),
    abort: (sink, reason) => void sink.abort(new Error(reason)).catch(() => undefined),
  };
}

import { describe, expect, it } from "vitest";
import {
  EventMerge,
  eventStreamBody,
  isEventStreamContentType,
  MAX_SETTLE_EVENT_CHARS,
  MAX_SETTLE_MERGED_CHARS,
  MAX_SETTLE_STREAM_BYTES,
  MAX_SETTLE_STREAM_EVENTS,
} from "../../../src/gateway/event-stream-body.ts";

const encoder = new TextEncoder();
const never = new Promise<void>(() => undefined);

/** A stream of `parts` as written, and what its reader did: bytes pulled, whether it was cancelled. */
function streamOf(parts: readonly (string | Uint8Array)[]) {
  const seen = { pulled: 0, cancelled: false };
  let index = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      const part = parts[index++];
      if (part === undefined) return controller.close();
      const bytes = typeof part === "string" ? encoder.encode(part) : part;
      seen.pulled += bytes.byteLength;
      controller.enqueue(bytes);
    },
    cancel() {
      seen.cancelled = true;
    },
  });
  return { stream, seen };
}

/** A stream that never ends: `next(i)` is its i-th chunk, pulled only when read. */
function endless(next: (index: number) => string) {
  const seen = { pulled: 0, cancelled: false };
  let index = 0;
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        const bytes = encoder.encode(next(index++));
        seen.pulled += bytes.byteLength;
        controller.enqueue(bytes);
      },
      cancel() {
        seen.cancelled = true;
      },
    },
    { highWaterMark: 0 },
  );
  return { stream, seen };
}

/** `text` cut into pieces of `size` characters: chunk boundaries fall inside lines, fields and CRLF pairs. */
function cut(text: string, size: number): string[] {
  const pieces: string[] = [];
  for (let at = 0; at < text.length; at += size) pieces.push(text.slice(at, at + size));
  return pieces;
}

const get = (value: unknown, ...path: string[]): unknown => path.reduce<unknown>((at, key) => (at as Map<string, unknown>).get(key), value);

const OPENAI = [
  'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hel"}}],"usage":null}',
  'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}],"usage":null}',
  'data: {"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}',
  "data: [DONE]",
]
  .map((line) => `${line}\r\n\r\n`)
  .join("");

const ANTHROPIC = [
  'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":25,"output_tokens":1}}}',
  'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}',
  ": a comment, as a keep-alive",
  'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":15}}',
  'event: message_stop\ndata: {"type":"message_stop"}',
]
  .map((block) => `${block}\n\n`)
  .join("");

describe("res.body of a text/event-stream response", () => {
  it("is OpenAI's usage chunk, whatever the chunk boundaries (inside lines and CRLF pairs)", async () => {
    for (const size of [1, 2, 7, 64, OPENAI.length]) {
      const read = await eventStreamBody(streamOf(cut(OPENAI, size)).stream, never);
      expect(get("value" in read ? read.value : undefined, "usage", "total_tokens")).toBe(11n);
    }
  });

  it("merges Anthropic's events: message_start's message and message_delta's usage are both there", async () => {
    const read = await eventStreamBody(streamOf(cut(ANTHROPIC, 5)).stream, never);
    expect("value" in read).toBe(true);
    const value = "value" in read ? read.value : undefined;
    expect(get(value, "message", "usage", "input_tokens")).toBe(25n);
    expect(get(value, "usage", "output_tokens")).toBe(15n);
    expect(get(value, "type")).toBe("message_stop");
  });

  it("skips [DONE], text, arrays and garbage; with no JSON object at all, res.body is absent", async () => {
    const garbage = new Uint8Array(4096).map((_, index) => (index * 7919) % 256);
    const mixed = await eventStreamBody(
      streamOf(["data: [1,2]\n\n", garbage, "\n\ndata: {not json\n\n", 'data: {"usage":{"total_tokens":3}}\n\n', "data: [DONE]\n\n"]).stream,
      never,
    );
    expect(get("value" in mixed ? mixed.value : undefined, "usage", "total_tokens")).toBe(3n);
    expect(await eventStreamBody(streamOf([garbage, "data: hello\n\n"]).stream, never)).toEqual({ absent: "no event's data is a JSON object" });
  });

  it("drops an event the stream ends in the middle of, as the format says", async () => {
    const read = await eventStreamBody(streamOf(['data: {"usage":{"total_tokens":1}}\n\n', 'data: {"usage":{"total_tokens":2}}']).stream, never);
    expect(get("value" in read ? read.value : undefined, "usage", "total_tokens")).toBe(1n);
  });

  it("is absent when the stream breaks off", async () => {
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(encoder.encode('data: {"usage":{"total_tokens":1}}\n\n'));
        controller.error(new Error("connection reset"));
      },
    });
    expect(await eventStreamBody(stream, never)).toEqual({ absent: "the stream broke off" });
  });

  it("stops at a 10 MB event: the branch is cancelled after about one event's bound, not 10 MB", async () => {
    const piece = "a".repeat(16 * 1024);
    const parts = ['data: {"text":"', ...Array.from({ length: (10 * 1024 * 1024) / piece.length }, () => piece), '"}\n\n'];
    const { stream, seen } = streamOf(parts);
    expect(await eventStreamBody(stream, never)).toEqual({ absent: `an event of more than ${MAX_SETTLE_EVENT_CHARS} characters` });
    expect(seen.cancelled).toBe(true);
    expect(seen.pulled).toBeLessThanOrEqual(MAX_SETTLE_EVENT_CHARS + 2 * piece.length);
    // A 1 MB event in one chunk (the parser hands a whole line over at once): refused by its length. (10 MB in one
    // chunk is past the stream's own bound before it is parsed.)
    const whole = await eventStreamBody(streamOf([`data: {"text":"${"a".repeat(1024 * 1024)}"}\n\n`]).stream, never);
    expect(whole).toEqual({ absent: `an event of more than ${MAX_SETTLE_EVENT_CHARS} characters` });
  });

  it("stops an endless stream at its byte bound and cancels the branch", async () => {
    const event = `data: {"choices":[{"delta":{"content":"${"x".repeat(200)}"}}],"usage":null}\n\n`;
    const { stream, seen } = endless(() => event.repeat(64));
    expect(await eventStreamBody(stream, never)).toEqual({ absent: `a stream of more than ${MAX_SETTLE_STREAM_BYTES} bytes` });
    expect(seen.cancelled).toBe(true);
    expect(seen.pulled).toBeLessThanOrEqual(MAX_SETTLE_STREAM_BYTES + event.length * 64);
  });

  it("stops an endless stream of tiny events at the event bound", async () => {
    const { stream, seen } = endless(() => "data:{}\n\n".repeat(1000));
    expect(await eventStreamBody(stream, never)).toEqual({ absent: `more than ${MAX_SETTLE_STREAM_EVENTS} events` });
    expect(seen.cancelled).toBe(true);
  });

  it("stops a stream that outlasts its reservation when the caller's clock says so, and cancels the branch", async () => {
    let expire!: () => void;
    const expired = new Promise<void>((resolve) => {
      expire = resolve;
    });
    let waiting!: () => void;
    const pulledOnce = new Promise<void>((resolve) => {
      waiting = resolve;
    });
    let cancelled = false;
    // One event, then nothing more, ever: a pull that never resolves.
    let pulls = 0;
    const stream = new ReadableStream<Uint8Array>(
      {
        pull(controller) {
          pulls += 1;
          if (pulls === 1) controller.enqueue(encoder.encode('data: {"usage":{"total_tokens":5}}\n\n'));
          else {
            waiting();
            return new Promise<void>(() => undefined);
          }
        },
        cancel() {
          cancelled = true;
        },
      },
      { highWaterMark: 0 },
    );
    const read = eventStreamBody(stream, expired);
    await pulledOnce;
    expire();
    expect(await read).toEqual({ absent: "the stream outlasted its reservation" });
    expect(cancelled).toBe(true);
  });
});

describe("the merge of a stream's events", () => {
  it("holds only the events a key still takes its value from: 10,000 chunks of OpenAI's shape hold one", () => {
    const merge = new EventMerge();
    const chunk = `{"id":"c1","choices":[{"delta":{"content":"${"x".repeat(1000)}"}}],"usage":null}`;
    for (let index = 0; index < 10_000; index++) expect(merge.add(chunk)).toBeUndefined();
    expect(merge.add('{"id":"c1","choices":[],"usage":{"total_tokens":10000}}')).toBeUndefined();
    const read = merge.result();
    expect(get("value" in read ? read.value : undefined, "usage", "total_tokens")).toBe(10_000n);
  });

  it("refuses events that leave more than its bound held: each a key of its own", () => {
    const merge = new EventMerge();
    const size = 1024;
    let refused: string | undefined;
    let index = 0;
    while (refused === undefined && index < 1000) refused = merge.add(`{"k${index++}":"${"y".repeat(size)}"}`);
    expect(refused).toBe(`merged events of more than ${MAX_SETTLE_MERGED_CHARS} characters`);
    expect(index).toBeLessThanOrEqual(Math.ceil(MAX_SETTLE_MERGED_CHARS / size) + 1);
  });

  it("is absent when what it holds nests deeper than a JSON body may", () => {
    const merge = new EventMerge();
    merge.add(`{"deep":${"[".repeat(40)}${"]".repeat(40)}}`);
    expect(merge.result()).toEqual({ absent: "the merged events nest too deep" });
  });
});

describe("event-stream content types", () => {
  it("are text/event-stream, with parameters and in any case", () => {
    expect(["text/event-stream", "Text/Event-Stream; charset=utf-8", "application/json", null].map(isEventStreamContentType)).toEqual([
      true,
      true,
      false,
      false,
    ]);
  });
});

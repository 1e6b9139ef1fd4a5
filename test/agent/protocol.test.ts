import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeFrame, decodeFrames, encodeFrame, LARGE_DATA_CHUNK, MAX_DATA_CHUNK, PROTOCOL_VERSION, type Frame } from "../../src/relay/index.ts";
import { DataSequence, FrameOutbox, OrderedReceiver } from "../../src/relay/framing.ts";

const roundTrip = (frame: Frame) => {
  const decoded = decodeFrame(encodeFrame(frame));
  if (!decoded.ok) throw new Error(decoded.error);
  return decoded.frame;
};

describe("frame codec", () => {
  it.each<Frame>([
    { type: "hello", agent_version: "1.0.0", metadata: "m", os: "linux/x64" },
    { type: "welcome", session_id: "ts_x", region: "local", heartbeat_ms: 5000 },
    {
      type: "start_tunnel",
      request_id: 1,
      name: "web",
      proto: "http",
      forwards_to: "http://localhost:3000",
      subdomain: "abc",
      traffic_policy: { inbound: [] },
    },
    {
      type: "tunnel_started",
      request_id: 1,
      tunnel: { id: "tn_1", name: "web", public_url: "http://a.localhost:8787", proto: "http", subdomain: "a", started_at: "2026-01-01T00:00:00.000Z" },
    },
    { type: "tunnel_failed", request_id: 2, code: "unsupported_proto", message: "no" },
    { type: "stop_tunnel", request_id: 3, tunnel_id: "tn_1" },
    { type: "tunnel_stopped", tunnel_id: "tn_1", reason: "gone" },
    {
      type: "request_head",
      stream: 7,
      tunnel_id: "tn_1",
      method: "GET",
      target: "/?a=1",
      headers: [
        ["a", "1"],
        ["a", "2"],
      ],
      client_addr: "1.2.3.4",
      scheme: "https",
    },
    { type: "response_head", stream: 7, status: 204, status_text: "No Content", headers: [] },
    { type: "end", stream: 7, count: 3 },
    { type: "window", stream: 7, increment: 65536 },
    { type: "reset", stream: 7, code: "cancelled", message: "bye" },
  ])("round-trips $type", (frame) => {
    expect(roundTrip(frame)).toEqual(frame);
  });

  it("round-trips data frames byte for byte", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 2 ** 32 - 1 }), fc.nat(), fc.uint8Array({ maxLength: 2048 }), (stream, seq, bytes) => {
        const frame = roundTrip({ type: "data", stream, seq: seq % 2 ** 32, bytes });
        expect(frame).toEqual({ type: "data", stream, seq: seq % 2 ** 32, bytes });
      }),
    );
  });

  // version, type, stream (4), payload length (4), payload
  it.each([
    [[1, 1, 0], "frame of 3 bytes is shorter than the 10-byte header"],
    [[9, 1, 0, 0, 0, 0, 0, 0, 0, 0], `protocol version 9 is not supported (this end speaks version ${PROTOCOL_VERSION})`],
    [[1, 99, 0, 0, 0, 0, 0, 0, 0, 0], "unknown frame type 99"],
    [[1, 1, 0, 0, 0, 5, 0, 0, 0, 2, 0x7b, 0x7d], "hello frame must be on stream 0"],
    [[1, 18, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0], "data frame must not be on stream 0"],
    [[1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0x7b], "hello frame payload is not valid UTF-8 JSON"],
    [[1, 20, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 0], "window increment must be positive"],
    [[1, 19, 0, 0, 0, 1, 0, 0, 0, 0], "end frame must carry a 4-byte count of data frames"],
    [[1, 19, 0, 0, 0, 1, 0, 0, 0, 9, 0, 0, 0, 0], "end frame declares 9 payload bytes but the message has 4 left"],
  ])("rejects %j: %s", (bytes, error) => {
    expect(decodeFrames(new Uint8Array(bytes))).toEqual({ ok: false, error });
  });

  it("reads several frames from one message, and the outbox batches frames sent in one turn", async () => {
    const messages: Uint8Array[] = [];
    const outbox = new FrameOutbox(
      (message) => messages.push(message),
      (flush) => queueMicrotask(flush),
    );
    outbox.push({ type: "response_head", stream: 1, status: 200, headers: [] });
    outbox.push({ type: "data", stream: 1, seq: 0, bytes: new Uint8Array([1, 2, 3]) });
    outbox.push({ type: "end", stream: 1, count: 1 });
    await Promise.resolve();
    expect(messages).toHaveLength(1);
    const decoded = decodeFrames(messages[0]);
    expect(decoded.ok && decoded.frames.map((frame) => frame.type)).toEqual(["response_head", "data", "end"]);
  });

  it("validates JSON payloads and names the field", () => {
    const bytes = encodeFrame({ type: "welcome", session_id: "ts", region: "x", heartbeat_ms: 5 });
    const tampered = new TextEncoder().encode(new TextDecoder().decode(bytes.subarray(10)).replace("5", '"soon"'));
    const frame = new Uint8Array(10 + tampered.length);
    frame.set(bytes.subarray(0, 10));
    new DataView(frame.buffer).setUint32(6, tampered.length);
    frame.set(tampered, 10);
    const decoded = decodeFrame(frame);
    expect(decoded.ok).toBe(false);
    expect(!decoded.ok && decoded.error).toMatch(/^welcome frame: heartbeat_ms: /);
  });

  it("takes a max_data_chunk in hello and welcome from 64 KiB to 512 KiB and refuses any other, naming the field", () => {
    for (const type of ["hello", "welcome"] as const) {
      const base = type === "hello" ? { type, agent_version: "1" } : { type, session_id: "ts", region: "x", heartbeat_ms: 5 };
      for (const size of [MAX_DATA_CHUNK, LARGE_DATA_CHUNK])
        expect(roundTrip({ ...base, max_data_chunk: size } as Frame)).toMatchObject({ max_data_chunk: size });
      for (const size of [MAX_DATA_CHUNK - 1, LARGE_DATA_CHUNK + 1, 2 ** 31]) {
        const decoded = decodeFrame(encodeFrame({ ...base, max_data_chunk: size } as Frame));
        expect(!decoded.ok && decoded.error).toMatch(new RegExp(`^${type} frame: max_data_chunk: `));
      }
    }
  });

  it("splits a large chunk into numbered frames no larger than MAX_DATA_CHUNK", () => {
    const sequence = new DataSequence(3);
    const frames = [...sequence.frames(new Uint8Array(MAX_DATA_CHUNK * 2 + 10))];
    expect(frames.map((f) => [f.seq, f.bytes.byteLength])).toEqual([
      [0, MAX_DATA_CHUNK],
      [1, MAX_DATA_CHUNK],
      [2, 10],
    ]);
    expect(sequence.end()).toEqual({ type: "end", stream: 3, count: 3 });
  });
});

describe("OrderedReceiver", () => {
  it("delivers the body in order and the end last, whatever order the frames and the head arrive in", () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ minLength: 1, maxLength: 8 }), { maxLength: 12 }), fc.integer(), (chunks, seed) => {
        const events: Array<{ kind: "head" } | { kind: "data"; seq: number } | { kind: "end" }> = [
          { kind: "head" },
          ...chunks.map((_, seq) => ({ kind: "data" as const, seq })),
          { kind: "end" },
        ];
        const shuffled = fc.sample(fc.shuffledSubarray(events, { minLength: events.length, maxLength: events.length }), { numRuns: 1, seed })[0];
        const received: Uint8Array[] = [];
        let ended = 0;
        const receiver = new OrderedReceiver({ data: (bytes) => received.push(bytes), end: () => ended++ }, { headFirst: true });
        for (const event of shuffled) {
          if (event.kind === "head") receiver.open();
          else if (event.kind === "data") expect(receiver.data(event.seq, chunks[event.seq])).toBe(true);
          else expect(receiver.end(chunks.length)).toBe(true);
        }
        expect(received).toEqual(chunks);
        expect(ended).toBe(1);
      }),
    );
  });

  it("refuses a repeated sequence number and an end that contradicts what was seen", () => {
    const receiver = new OrderedReceiver({ data: () => undefined, end: () => undefined }, { headFirst: false });
    expect(receiver.data(0, new Uint8Array([1]))).toBe(true);
    expect(receiver.data(0, new Uint8Array([1]))).toBe(false);
    expect(receiver.data(5, new Uint8Array([1]))).toBe(true);
    expect(receiver.end(3)).toBe(false);
  });
});

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeMessage, encodeFrame } from "../../../src/relay/frame-codec.ts";
import {
  MAX_CLIENT_ADDR_CHARS,
  MAX_HEADER_FIELDS,
  MAX_HEADER_NAME_CHARS,
  MAX_HEADER_VALUE_CHARS,
  MAX_METHOD_CHARS,
  MAX_REQUEST_HEAD_BYTES,
  MAX_TARGET_CHARS,
} from "../../../src/relay/head-bounds.ts";
import { LARGE_DATA_CHUNK } from "../../../src/relay/protocol.ts";
import { encodeRequestHead, requestHead, type RelayRequest } from "../../../src/tunnels/relay-request.ts";

/** A length around `max`: small, at it, one past it, or just under it. */
const around = (max: number) => fc.oneof(fc.integer({ min: 1, max: 8 }), fc.constantFrom(max - 1, max, max + 1));
const repeated = (chars: string) => (length: number) => fc.constantFrom(...chars).map((char) => char.repeat(length));
/** Header names are tokens (the runtime's Headers refuses others), values byte strings: latin-1 ones grow when encoded. */
const name = around(MAX_HEADER_NAME_CHARS).chain(repeated("ax-9"));
const value = fc.oneof(
  around(MAX_HEADER_VALUE_CHARS).chain(repeated('v"\\é\t')),
  fc.string({ maxLength: 8 }).map((text) => text.replace(/[^\x20-\x7e]/g, "")),
);
const fields = fc.oneof(
  fc.array(fc.tuple(name, value), { maxLength: 6 }),
  // counts around the bound: the edge adds Host, so 511 of the client's are 512 in the frame
  fc
    .constantFrom(MAX_HEADER_FIELDS - 2, MAX_HEADER_FIELDS - 1, MAX_HEADER_FIELDS)
    .map((n) => Array.from({ length: n }, (_, i): [string, string] => [`x-${i}`, "v"])),
  // every field within its bound, the whole head past MAX_REQUEST_HEAD_BYTES, or just under it
  fc.integer({ min: 60, max: 66 }).map((n) => Array.from({ length: n }, (_, i): [string, string] => [`x-wide-${i}`, "w".repeat(MAX_HEADER_VALUE_CHARS)])),
);

const request = fc.record({
  method: around(MAX_METHOD_CHARS).chain(repeated("GETPOS")),
  target: around(MAX_TARGET_CHARS).chain((length) => repeated("a/?=%é")(length - 1).map((rest) => `/${rest}`)),
  fields,
  clientAddr: fc.oneof(fc.constantFrom("127.0.0.1", "2001:db8::1"), around(MAX_CLIENT_ADDR_CHARS).chain(repeated("1:"))),
  scheme: fc.constantFrom("http", "https"),
  host: fc.constantFrom("abc.localhost:8787", "h".repeat(300)),
  upgrade: fc.boolean(),
});

describe("the edge relays only request heads the agent decodes", () => {
  it("a head the edge's check passes decodes at the agent; one it refuses is answered 431, 414 or 501, never sent, and one the agent refuses", () => {
    fc.assert(
      fc.property(request, (generated) => {
        const headers = new Headers();
        for (const [field, text] of generated.fields) headers.append(field, text);
        const relayed: RelayRequest = { tunnelId: "tn_1", headers, body: null, ...generated };
        const head = encodeRequestHead(1, relayed);
        const unchecked = decodeMessage(encodeFrame(requestHead(1, relayed)), LARGE_DATA_CHUNK);
        if (!head.ok) {
          expect([431, 414, 501]).toContain(head.status);
          // and the check is not stricter than the agent: the frame the edge did not send, the agent would have refused
          expect(unchecked.ok && unchecked.undecodable.length === 0).toBe(false);
          return;
        }
        expect(head.encoded.byteLength).toBeLessThanOrEqual(MAX_REQUEST_HEAD_BYTES);
        const decoded = decodeMessage(head.encoded, LARGE_DATA_CHUNK);
        expect(decoded.ok && decoded.undecodable).toEqual([]);
        expect(decoded.ok && decoded.frames[0]).toMatchObject({ type: "request_head", stream: 1, method: generated.method, target: generated.target });
      }),
      { numRuns: 300 },
    );
  });
});

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { FAST_PAYLOADS, payloadSchemas } from "../../../src/relay/index.ts";

/** Strings around each bound (empty, at the limit, one past it), and values of the wrong type. */
const text = (max: number) =>
  fc.oneof(fc.string({ maxLength: 4 }), fc.constantFrom("", "x".repeat(max), "x".repeat(max + 1), "é".repeat(max)), fc.constant(7), fc.constant(null));
const header = fc.oneof(fc.tuple(text(256), text(16 * 1024)), fc.array(fc.string({ maxLength: 3 }), { maxLength: 3 }), fc.constant("name: value"));
const headers = fc.oneof(fc.array(header, { maxLength: 4 }), fc.constant(Array.from({ length: 513 }, () => ["a", "b"])), fc.constant({}));
const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });

describe("protocol: the heads' fast check agrees with their schema", () => {
  it("response_head: whatever the fast check accepts, the schema accepts, with the same result", () => {
    fc.assert(
      fc.property(
        fc.record(
          {
            status: fc.oneof(fc.integer({ min: 90, max: 610 }), fc.double(), fc.constant("200")),
            status_text: maybe(text(256)),
            headers,
            body_channel: maybe(fc.constantFrom(true, false, "true", 1)),
            extra: fc.string(),
          },
          { requiredKeys: [] },
        ),
        (value) => {
          const fast = FAST_PAYLOADS.response_head!(value);
          const slow = payloadSchemas.response_head.safeParse(value);
          if (fast) expect(slow).toEqual({ success: true, data: fast });
          else if (slow.success) expect.fail(`the fast check refused what the schema accepts: ${JSON.stringify(value)}`);
        },
      ),
    );
  });

  it("request_head: whatever the fast check accepts, the schema accepts, with the same result", () => {
    fc.assert(
      fc.property(
        fc.record(
          {
            tunnel_id: fc.oneof(fc.string(), fc.constant(1)),
            method: text(32),
            target: text(16 * 1024),
            headers,
            client_addr: text(64),
            scheme: text(8),
            upgrade: maybe(fc.constantFrom("websocket", "h2c", 1)),
            extra: fc.string(),
          },
          { requiredKeys: [] },
        ),
        (value) => {
          const fast = FAST_PAYLOADS.request_head!(value);
          const slow = payloadSchemas.request_head.safeParse(value);
          if (fast) expect(slow).toEqual({ success: true, data: fast });
          else if (slow.success) expect.fail(`the fast check refused what the schema accepts: ${JSON.stringify(value)}`);
        },
      ),
    );
  });
});

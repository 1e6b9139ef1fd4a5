import { describe, expect, it } from "vitest";
import { checkRequestHead, MAX_REQUEST_HEAD_BYTES, type RequestHeadFields } from "../../../src/relay/head-bounds.ts";

const head = (change: Partial<RequestHeadFields> = {}): RequestHeadFields => ({
  tunnel_id: "tn_1",
  method: "GET",
  target: "/",
  headers: [["host", "abc.localhost"]],
  client_addr: "127.0.0.1",
  scheme: "https",
  ...change,
});
const many = (n: number): Array<[string, string]> => Array.from({ length: n }, (_, i) => [`x-${i}`, "v"]);

describe("the relay's request-head bounds", () => {
  it("a head within every bound passes", () => {
    expect(checkRequestHead(head({ headers: many(512), target: `/${"a".repeat(16383)}` }), MAX_REQUEST_HEAD_BYTES)).toEqual({ ok: true });
  });

  it.each([
    ["a method of 33 characters answers 501", head({ method: "M".repeat(33) }), 0, 501, "its method has 33 characters, more than 32"],
    ["a target of 16385 characters answers 414", head({ target: `/${"t".repeat(16384)}` }), 0, 414, "its target has 16385 characters, more than 16384"],
    ["513 header fields answer 431", head({ headers: many(513) }), 0, 431, "it has 513 header fields, more than 512"],
    ["a header name of 257 characters answers 431", head({ headers: [["n".repeat(257), "v"]] }), 0, 431, "a header name has 257 characters, more than 256"],
    [
      "a header value of 16385 characters answers 431",
      head({ headers: [["x-big", "v".repeat(16385)]] }),
      0,
      431,
      'header "x-big" has a value of 16385 characters, more than 16384',
    ],
    ["an empty header name answers 431", head({ headers: [["", "v"]] }), 0, 431, "a header field has no name"],
    ["a header value that is not text answers 431", head({ headers: [["x-n", 7 as unknown as string]] }), 0, 431, 'header "x-n" has no text value'],
    ["a client address of 65 characters answers 431", head({ client_addr: "1".repeat(65) }), 0, 431, "its client address has 65 characters, more than 64"],
    ["a head past MAX_REQUEST_HEAD_BYTES answers 431", head(), MAX_REQUEST_HEAD_BYTES + 1, 431, "its head takes 1047553 bytes, more than 1047552"],
    ["an empty method answers 400", head({ method: "" }), 0, 400, "its method is empty"],
    ["an empty target answers 400", head({ target: "" }), 0, 400, "its target is empty"],
    ["a scheme of 9 characters answers 400", head({ scheme: "gopherxyz" }), 0, 400, "its scheme has more than 8 characters"],
  ])("%s", (_name, fields, bytes, status, reason) => {
    expect(checkRequestHead(fields, bytes)).toEqual({ ok: false, status, reason });
  });

  it("a header name in a reason is cut to 64 characters", () => {
    const verdict = checkRequestHead(head({ headers: [["n".repeat(200), "v".repeat(16385)]] }), 0);
    expect(verdict).toEqual({ ok: false, status: 431, reason: `header "${"n".repeat(64)}…" has a value of 16385 characters, more than 16384` });
  });
});

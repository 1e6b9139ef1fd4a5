import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { z } from "@hono/zod-openapi";
import { createManagementApp } from "../../../src/management/app.ts";
import { MAX_BODY_BYTES } from "../../../src/management/body.ts";
import { NOT_WELL_FORMED_MESSAGE } from "../../../src/management/text.ts";
import { TEST_KEYS } from "./keys.ts";
import { type BotUserList, ORIGIN, call, callError, callJson } from "./helpers.ts";

const EDGE = "edghts_local";
const ROUTE = "edghtsrt_demo";
const breakerPath = `/edges/https/${EDGE}/routes/${ROUTE}/circuit_breaker`;

/** `{"name":"<bytes>"}` with raw bytes in the string, sent as JSON. */
function nameWithBytes(...bytes: number[]): Blob {
  const encoder = new TextEncoder();
  return new Blob([encoder.encode('{"name":"'), new Uint8Array(bytes), encoder.encode('"}')], { type: "application/json" });
}

describe("unpaired surrogates in JSON strings", () => {
  it("a module body's edge_id or id with an unpaired surrogate → 400 ERR_SVC_215 naming the field", async () => {
    const edge = await callError("PUT", breakerPath, 400, 215, { key: "devSecond", json: { edge_id: `${EDGE}\ud800`, module: {} } });
    expect(edge.msg).toBe(`The field 'edge_id' ${NOT_WELL_FORMED_MESSAGE}.`);
    expect(edge.details.field).toBe("edge_id");
    const id = await callError("PUT", breakerPath, 400, 215, { key: "devSecond", json: { id: "\udc00", enabled: true } });
    expect(id.msg).toBe(`The field 'id' ${NOT_WELL_FORMED_MESSAGE}.`);
    expect(id.details.field).toBe("id");
    await callError("GET", breakerPath, 404, 204, { key: "devSecond" });
  });

  it("every string of every operation's body, query and path schema refuses an unpaired surrogate", () => {
    const refused: string[] = [];
    for (const definition of createManagementApp({ edges: { edge: () => undefined, edges: () => [] } }).openAPIRegistry.definitions) {
      if (definition.type !== "route") continue;
      const { method, path, request } = definition.route;
      const media = request?.body?.content["application/json"];
      const body = media !== undefined && "schema" in media ? media.schema : undefined;
      const parts: Array<[string, unknown]> = [
        ["body", body],
        ["query", request?.query],
        ["path", request?.params],
      ];
      for (const [part, schema] of parts) {
        for (const [field, string] of stringsOf(schema)) {
          const result = string.safeParse("ok\ud800");
          expect(result.success, `${method} ${path} ${part} ${field}`).toBe(false);
          expect(result.error?.issues[0].message).toBe(NOT_WELL_FORMED_MESSAGE);
          refused.push(`${method} ${path} ${part} ${field}`);
        }
      }
    }
    expect(refused).toEqual(
      expect.arrayContaining([
        "post /bot_users body name",
        "patch /bot_users/{id} body id",
        "patch /bot_users/{id} body name",
        "get /bot_users query before_id",
        "get /bot_users query beforeId",
        "get /bot_users query limit",
        "get /tunnels query before_id",
        "put /edges/https/{edge_id}/routes/{id}/circuit_breaker body edge_id",
        "put /edges/https/{edge_id}/routes/{id}/websocket_tcp_converter body id",
        "get /tunnels/{id} path id",
      ]),
    );
  });
});

describe("request bodies that are not UTF-8", () => {
  const cases: Array<[string, number[]]> = [
    ["a byte 0xff", [0x61, 0xff]],
    ["an overlong encoding of '/'", [0xc0, 0xaf]],
    ["a surrogate encoded as UTF-8 (CESU-8)", [0xed, 0xa0, 0x80]],
    ["a truncated three-byte sequence", [0xe2, 0x82]],
    ["a code point above U+10FFFF", [0xf4, 0x90, 0x80, 0x80]],
  ];
  for (const [title, bytes] of cases) {
    it(`${title} → 400 ERR_SVC_213 saying the body is not valid UTF-8 and where; nothing is stored`, async () => {
      const offset = '{"name":"'.length + (bytes[0] === 0x61 ? 1 : 0);
      const envelope = await callError("POST", "/bot_users", 400, 213, { key: "devSecond", body: nameWithBytes(...bytes) });
      expect(envelope.msg).toBe(`The request body is not valid UTF-8: the bytes at offset ${offset} are ill-formed.`);
      expect(envelope.details.offset).toBe(offset);
    });
  }

  it("none of those bodies created a bot user", async () => {
    const list = await callJson<BotUserList>("GET", "/bot_users", 200, { key: "devSecond" });
    expect(list.bot_users.filter((bot) => bot.name.includes("\ufffd"))).toEqual([]);
  });

  it("well-formed multi-byte UTF-8 in a body is read as sent", async () => {
    const response = await call("POST", "/bot_users", { key: "devSecond", body: nameWithBytes(0xf0, 0x9f, 0x9a, 0x80, 0xc3, 0xa9) });
    expect(response.status).toBe(201);
    expect(((await response.json()) as { name: string }).name).toBe("🚀é");
  });

  it("the body limit counts bytes: a streamed body (no content-length) of 22,000 three-byte characters is refused", async () => {
    const chars = 22_000;
    expect(3 * chars).toBeGreaterThan(MAX_BODY_BYTES);
    expect(chars).toBeLessThan(MAX_BODY_BYTES);
    const bytes = new TextEncoder().encode(JSON.stringify({ name: "界".repeat(chars) }));
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(bytes);
        controller.close();
      },
    });
    const response = await SELF.fetch(`${ORIGIN}/bot_users`, {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_KEYS.devSecond.key}`, "service-version": "2", "content-type": "application/json" },
      body,
    });
    const envelope = (await response.json()) as { error_code: string; msg: string };
    expect(response.status).toBe(400);
    expect(envelope).toMatchObject({ error_code: "ERR_SVC_213", msg: `The request body is larger than ${MAX_BODY_BYTES} bytes.` });
  });

  it("hostile: a streamed body of 8 MiB is given up past the bound, not read whole first", async () => {
    const chunk = new Uint8Array(16 * 1024).fill(0x20);
    let pulled = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (pulled === 0) controller.enqueue(new TextEncoder().encode('{"name":"'));
        if (pulled >= 8 * 1024 * 1024) return controller.close();
        pulled += chunk.byteLength;
        controller.enqueue(chunk);
      },
    });
    const response = await SELF.fetch(`${ORIGIN}/bot_users`, {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_KEYS.devSecond.key}`, "service-version": "2", "content-type": "application/json" },
      body,
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error_code: string }).error_code).toBe("ERR_SVC_213");
    // What the pipe between the test and the Worker buffers besides the 64 KiB read; the whole 8 MiB before.
    expect(pulled).toBeLessThan(2 * 1024 * 1024);
  });
});

describe("query parameters", () => {
  it("a before_id whose percent-encoding is not UTF-8 → 400 ERR_SVC_215 naming before_id", async () => {
    const envelope = await callError("GET", "/bot_users?before_id=%ED%A0%80", 400, 215, { key: "devSecond" });
    expect(envelope.details.field).toBe("before_id");
  });
});

/** The string schemas inside `schema`, by field path; wrappers, objects, unions, arrays and records are opened. */
function stringsOf(schema: unknown, path = ""): Array<[string, z.ZodType]> {
  if (schema === undefined || schema === null) return [];
  const zod = schema as z.ZodType;
  const def = zod._zod.def as unknown as Record<string, unknown> & { type: string };
  const join = (key: string) => (path === "" ? key : `${path}.${key}`);
  switch (def.type) {
    case "string":
      return [[path, zod]];
    case "object":
      return Object.entries(def.shape as Record<string, unknown>).flatMap(([key, value]) => stringsOf(value, join(key)));
    case "optional":
    case "nullable":
    case "default":
    case "prefault":
    case "readonly":
    case "catch":
      return stringsOf(def.innerType, path);
    case "union":
      return (def.options as unknown[]).flatMap((option) => stringsOf(option, path));
    case "array":
      return stringsOf(def.element, `${path}[]`);
    case "record":
      return [...stringsOf(def.keyType, `${path}{key}`), ...stringsOf(def.valueType, `${path}{}`)];
    case "pipe":
      return [...stringsOf(def.in, path), ...stringsOf(def.out, path)];
    default:
      return [];
  }
}

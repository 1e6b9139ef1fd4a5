/** A misspelt field in a management API body is named, with the field it was probably meant to be. */

import { describe, expect, it } from "vitest";
import { MAX_ECHOED_FIELD_CHARS, MAX_REPORTED_UNKNOWN_FIELDS } from "../../../src/management/unknown-fields.ts";
import { callError, createBotUser } from "./helpers.ts";

const breakerPath = "/edges/https/edghts_local/routes/edghtsrt_demo/circuit_breaker";
const converterPath = "/edges/https/edghts_local/routes/edghtsrt_demo/websocket_tcp_converter";

describe("a misspelt field", () => {
  it("POST /bot_users {nam}: 400 ERR_SVC_214 naming `nam` and suggesting `name`, not 'name is required'", async () => {
    const envelope = await callError("POST", "/bot_users", 400, 214, { json: { nam: "x" } });
    expect(envelope.msg).toBe("The field 'nam' is not a known field; did you mean 'name'?");
    expect(envelope.details).toEqual({
      field: "nam",
      unknown_fields: ["nam"],
      known_fields: ["name", "active"],
      did_you_mean: "name",
      operation_id: envelope.details.operation_id,
    });
  });

  it("PATCH /bot_users/{id} {actve}: suggests `active`", async () => {
    const bot = await createBotUser("typo-target");
    const envelope = await callError("PATCH", `/bot_users/${bot.id}`, 400, 214, { json: { actve: false } });
    expect(envelope.msg).toBe("The field 'actve' is not a known field; did you mean 'active'?");
  });

  it("a route module's fields, bare and wrapped, and letter case", async () => {
    expect((await callError("PUT", breakerPath, 400, 214, { json: { num_bucket: 3 } })).msg).toBe(
      "The field 'num_bucket' is not a known field; did you mean 'num_buckets'?",
    );
    expect((await callError("PUT", breakerPath, 400, 214, { json: { module: { tripped_duraton: 5 } } })).msg).toBe(
      "The field 'module.tripped_duraton' is not a known field; did you mean 'module.tripped_duration'?",
    );
    expect((await callError("PUT", converterPath, 400, 214, { json: { Enabled: true } })).details.did_you_mean).toBe("enabled");
  });

  it("a field near no known one: named, no guess, the known fields listed in details", async () => {
    const envelope = await callError("POST", "/bot_users", 400, 214, { json: { name: "x", colour: "blue" } });
    expect(envelope.msg).toBe("The field 'colour' is not a known field.");
    expect(envelope.details.known_fields).toEqual(["name", "active"]);
    expect(envelope.details.did_you_mean).toBeUndefined();
  });
});

describe("bounds", () => {
  it(`600 unknown fields of 100 characters: ${MAX_REPORTED_UNKNOWN_FIELDS} listed`, async () => {
    const json = Object.fromEntries(Array.from({ length: 600 }, (_, i) => [`${String(i).padStart(4, "0")}${"f".repeat(96)}`, 1]));
    const envelope = await callError("POST", "/bot_users", 400, 214, { json });
    expect(envelope.details.unknown_fields).toHaveLength(MAX_REPORTED_UNKNOWN_FIELDS);
  });

  it(`a 60,000-character field name is echoed as ${MAX_ECHOED_FIELD_CHARS} characters and compared with nothing`, async () => {
    const envelope = await callError("POST", "/bot_users", 400, 214, { json: { ["n".repeat(60_000)]: 1 } });
    expect(envelope.details.field).toBe(`${"n".repeat(MAX_ECHOED_FIELD_CHARS - 1)}…`);
    expect(envelope.msg.length).toBeLessThan(200);
    expect(envelope.details.did_you_mean).toBeUndefined();
  });
});

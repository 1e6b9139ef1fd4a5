/** ServiceError: status, code and message, and an options object for what it carries besides. */

import { describe, expect, it } from "vitest";
import { ErrorCode, ServiceError } from "../../src/errors.ts";

describe("ServiceError", () => {
  it("carries details, headers and advice given by name, and none by default", async () => {
    const bare = new ServiceError(404, ErrorCode.noRoute, "No route.");
    expect(bare).toMatchObject({ details: {}, headers: {}, advice: undefined });
    const full = new ServiceError(503, ErrorCode.upstreamUnavailable, "Busy.", {
      details: { retry_after: 2 },
      headers: { "retry-after": "2" },
      advice: { title: "Busy", steps: ["Wait."] },
    });
    const response = full.toResponse("op_1");
    expect(response.headers.get("retry-after")).toBe("2");
    expect(await response.json()).toEqual({
      error_code: `ERR_SVC_${ErrorCode.upstreamUnavailable}`,
      status_code: 503,
      msg: "Busy.",
      details: { retry_after: 2, operation_id: "op_1" },
    });
  });

  it("keeps a cause for logs and never sends it to the client", async () => {
    const cause = new Error("connect ECONNREFUSED 127.0.0.1:9 (internal detail)");
    const error = new ServiceError(502, ErrorCode.upstreamUnavailable, "The upstream could not be reached.", { cause });
    expect(error.cause).toBe(cause);
    expect(await error.toResponse("op_2").text()).not.toContain("internal detail");
  });
});

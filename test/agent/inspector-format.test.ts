/** The inspector page's pure helpers (format.js, run here in Node as the page runs it). */

import { describe, expect, it } from "vitest";
import { apiErrorMessage, clockTime, failureText, matchesFilter, replayField } from "../../src/agent/inspector/assets/format.js";

describe("inspector helpers", () => {
  it("says an API error once when msg already ends with details.err", () => {
    const body = {
      msg: "invalid replay request: request.method: must be an HTTP method token",
      details: { err: "request.method: must be an HTTP method token" },
    };
    expect(apiErrorMessage(body, "400 Bad Request")).toBe("invalid replay request: request.method: must be an HTTP method token");
    expect(apiErrorMessage({ msg: "tunnel not found", details: { err: "no tunnel 'x'" } }, "404")).toBe("tunnel not found: no tunnel 'x'");
    expect(apiErrorMessage({ details: { err: "only err" } }, "500")).toBe("only err");
    expect(apiErrorMessage(null, "502 Bad Gateway")).toBe("502 Bad Gateway");
  });

  it("finds the replay field an error names", () => {
    expect(replayField("invalid replay request: request.method: must be an HTTP method token")).toBe("method");
    expect(replayField("invalid replay request: request.body_base64: not base64")).toBe("body");
    expect(replayField("invalid replay request: id: required")).toBeNull();
  });

  it("explains a failed exchange by its code, keeping the agent's message", () => {
    expect(failureText({ code: "upstream_unreachable", message: "could not connect to http://localhost:3000: connect ECONNREFUSED" })).toEqual({
      title: "The local service could not be reached",
      detail: "could not connect to http://localhost:3000: connect ECONNREFUSED (upstream_unreachable)",
      text: "Nothing accepted the connection at the tunnel's address. Is the service running? The public client got a 502 from the edge.",
    });
    expect(failureText({ code: "protocol_error", message: "bad frame" })).toEqual({
      title: "The exchange failed",
      detail: "bad frame (protocol_error)",
      text: "No response was recorded.",
    });
  });

  it("shows start times as a clock with milliseconds, in the page's time zone", () => {
    const start = new Date(2026, 10, 22, 9, 5, 7, 42);
    expect(clockTime(start.toISOString())).toBe("09:05:07.042");
    expect(clockTime("not a time")).toBe("");
  });

  it("filters by tunnel", () => {
    const summary = { status_code: 200, state: "complete", uri: "/", method: "GET", tunnel_name: "api" };
    expect(matchesFilter(summary, { tunnel: "api" })).toBe(true);
    expect(matchesFilter(summary, { tunnel: "web" })).toBe(false);
    expect(matchesFilter(summary, { tunnel: "" })).toBe(true);
  });
});

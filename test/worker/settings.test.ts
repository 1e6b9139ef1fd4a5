import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import type { Env } from "../../src/env.ts";
import worker from "../../src/worker.ts";

/** The Worker's entry with `overrides` in its environment, as a deployment with those variables would run it. */
async function fetchWith(overrides: Partial<Record<keyof Env, string>>, url: string): Promise<Response> {
  const ctx = createExecutionContext();
  const response = await worker.fetch(new Request(url), { ...env, ...overrides } as Env, ctx);
  await waitOnExecutionContext(ctx);
  return response;
}

describe("settings from the environment, in the Worker", () => {
  it("a typo in RATE_LIMIT_TIMEOUT_MS answers every request with a 500 that names it, and is logged", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    const response = await fetchWith({ RATE_LIMIT_TIMEOUT_MS: "1o00" }, "http://127.0.0.1/demo/x");
    expect(response.status).toBe(500);
    const body = (await response.json()) as { error_code: string; msg: string };
    expect(body.error_code).toBe("ERR_SVC_500");
    expect(body.msg).toBe(`The gateway's settings do not load: RATE_LIMIT_TIMEOUT_MS: expected a positive integer of milliseconds, got "1o00"`);
    expect(logged).toHaveBeenCalledWith(expect.stringContaining(`RATE_LIMIT_TIMEOUT_MS: expected a positive integer of milliseconds, got "1o00"`));
  });

  it("a bad value refuses the management API too, not only the gateway's routes", async () => {
    vi.spyOn(console, "error").mockImplementation(() => {});
    const response = await fetchWith({ TUNNEL_HEARTBEAT_MS: "50" }, "http://127.0.0.1/api/credentials");
    expect(response.status).toBe(500);
    expect(((await response.json()) as { msg: string }).msg).toBe(
      `The gateway's settings do not load: TUNNEL_HEARTBEAT_MS: expected an integer of milliseconds of at least 200, got "50"`,
    );
  });

  it("the configured settings serve", async () => {
    const response = await fetchWith({}, "http://127.0.0.1/demo/x");
    expect(response.status).toBe(200);
    await response.body?.cancel();
  });
});

/**
 * The committed policies/jwt-demo.yaml with a token from scripts/jwt-demo-token.mjs (node:crypto, not the
 * verifier): 5 requests a minute per verified subject, the 6th 429, another subject unaffected.
 */

import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { loadPolicy } from "../../../src/policy/compile.ts";
import { runPhase } from "../../../src/policy/evaluate.ts";
import type { ActionServices } from "../../../src/policy/exchange.ts";
import { makeExchange } from "../support/exchange.ts";
import { MemoryCounter } from "../support/memory-counter.ts";

const POLICY = "policies/jwt-demo.yaml";
const token = (subject: string, plan = "free") => execFileSync(process.execPath, ["scripts/jwt-demo-token.mjs", subject, plan], { encoding: "utf8" }).trim();

describe("policies/jwt-demo.yaml", () => {
  const loaded = loadPolicy(readFileSync(POLICY, "utf8"), POLICY);
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.issues));
  const counter = new MemoryCounter(Date.now());
  const services: ActionServices = { counter };
  const run = (bearer?: string, headers: Record<string, string> = {}) => {
    const exchange = makeExchange({ headers: { ...headers, ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) } });
    return runPhase(loaded.policy.inbound, exchange, services).then((answer) => ({ answer, exchange }));
  };

  it("limits each verified subject to 5 a minute, whatever x-jwt-sub the client sends", async () => {
    const alice = token("alice", "pro");
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await run(alice, { "x-jwt-sub": `spoof-${i}` })).answer?.status ?? 200);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    const { answer, exchange } = await run(token("bob"));
    expect(answer).toBeUndefined();
    expect(exchange.request.headers.get("x-jwt-sub")).toBe("bob");
    expect(exchange.request.headers.get("x-plan")).toBeNull();
  });

  it("tells the upstream the subject and the plan", async () => {
    const { exchange } = await run(token("carol", "pro"), { "x-jwt-sub": "mallory" });
    expect(exchange.request.headers.get("x-jwt-sub")).toBe("carol");
    expect(exchange.request.headers.get("x-plan")).toBe("pro");
  });

  it("answers no token 401 and a token for another key 401", async () => {
    expect((await run()).answer?.status).toBe(401);
    const [header, payload] = token("dave").split(".");
    expect((await run(`${header}.${payload}.${"A".repeat(43)}`)).answer?.status).toBe(401);
  });
});

import { describe, expect, it } from "vitest";
import { BreakerMemory, MAX_REMEMBERED_BREAKERS } from "../../../src/breaker/breaker-memory.ts";
import type { BreakerView } from "../../../src/breaker/circuit.ts";

const closed: BreakerView = { status: "closed", requests: 3, errors: 1, openUntil: 0 };
const openUntil = (until: number): BreakerView => ({ status: "open", requests: 0, errors: 0, openUntil: until });

describe("breaker memory", () => {
  it("a circuit it has not heard of must be asked about", () => {
    const memory = new BreakerMemory({ now: () => 0 });
    expect(memory.consult("c")).toEqual({ kind: "ask" });
  });

  it("a closed circuit passes without asking its object", () => {
    const memory = new BreakerMemory({ now: () => 0 });
    memory.learn("c", closed);
    expect(memory.consult("c")).toEqual({ kind: "pass" });
  });

  it("an open circuit is rejected from memory until its openUntil, then asked about (a probe may be due)", () => {
    let now = 10_000;
    const memory = new BreakerMemory({ now: () => now });
    memory.learn("c", openUntil(11_000));
    expect(memory.consult("c")).toEqual({ kind: "reject", view: openUntil(11_000) });
    now = 10_999;
    expect(memory.consult("c")).toMatchObject({ kind: "reject" });
    now = 11_000;
    expect(memory.consult("c")).toEqual({ kind: "ask" });
  });

  it("a half-open circuit is always asked about: only the object knows whether the probe is out", () => {
    const memory = new BreakerMemory({ now: () => 10_000 });
    memory.learn("c", { status: "half_open", requests: 0, errors: 0, openUntil: 9_000 });
    expect(memory.consult("c")).toEqual({ kind: "ask" });
  });

  it("the latest view wins", () => {
    const memory = new BreakerMemory({ now: () => 0 });
    memory.learn("c", openUntil(5_000));
    memory.learn("c", closed);
    expect(memory.consult("c")).toEqual({ kind: "pass" });
  });

  it("is bounded: past maxEntries the least recently used circuit is forgotten", () => {
    const memory = new BreakerMemory({ now: () => 0, maxEntries: 2 });
    memory.learn("a", closed);
    memory.learn("b", closed);
    memory.consult("a");
    memory.learn("c", closed);
    expect(memory.size).toBe(2);
    expect(memory.consult("a")).toEqual({ kind: "pass" });
    expect(memory.consult("b")).toEqual({ kind: "ask" });
  });

  it("holds at most MAX_REMEMBERED_BREAKERS circuits by default", () => {
    const memory = new BreakerMemory({ now: () => 0 });
    for (let i = 0; i < MAX_REMEMBERED_BREAKERS; i++) memory.learn(`c${i}`, closed);
    expect(memory.size).toBe(MAX_REMEMBERED_BREAKERS);
    // Full, it forgets the oldest eighth at once (src/bounded-map.ts), then fills up again.
    for (let i = 0; i < 10; i++) memory.learn(`d${i}`, closed);
    expect(memory.size).toBe(MAX_REMEMBERED_BREAKERS - Math.floor(MAX_REMEMBERED_BREAKERS / 8) + 10);
    expect(memory.consult("c0")).toEqual({ kind: "ask" });
    expect(memory.consult("d9")).toEqual({ kind: "pass" });
  });
});

describe("breaker memory under a tenant's flood of circuits", () => {
  it("10,000 tunnels' circuit-breaker actions keep it at MAX_REMEMBERED_BREAKERS, the latest remembered", () => {
    const memory = new BreakerMemory({ now: () => 0 });
    const name = (i: number) => JSON.stringify(["ingress", `tunnel:tn_${String(i).padStart(27, "0")}`, "inbound[15].actions[7]"]);
    for (let i = 0; i < 10_000; i++) memory.learn(name(i), closed);
    expect(memory.size).toBeLessThanOrEqual(MAX_REMEMBERED_BREAKERS);
    expect(memory.size).toBeGreaterThan(MAX_REMEMBERED_BREAKERS - MAX_REMEMBERED_BREAKERS / 8);
    expect(memory.consult(name(9_999))).toEqual({ kind: "pass" });
    expect(memory.consult(name(0))).toEqual({ kind: "ask" });
  });
});

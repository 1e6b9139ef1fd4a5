import { describe, expect, it } from "vitest";
import { REFUSAL_LOG_INTERVAL_MS, RefusalLog } from "../../../src/relay/refusal-log.ts";

function log() {
  let now = 1_000_000;
  const lines: string[] = [];
  const refusals = new RefusalLog({ what: "request heads refused", now: () => now, write: (line) => lines.push(line) });
  return { refusals, lines, advance: (ms: number) => (now += ms) };
}

describe("the relay's refusal log", () => {
  it("writes the first refusal at once", () => {
    const { refusals, lines } = log();
    refusals.refused("its target has 16385 characters, more than 16384");
    expect(lines).toEqual(["relay: 1 request heads refused since last report (last: its target has 16385 characters, more than 16384)"]);
  });

  it("counts refusals within the interval and writes them with the next line, with the last reason", () => {
    const { refusals, lines, advance } = log();
    refusals.refused("first");
    for (let i = 0; i < 4; i++) {
      advance(1000);
      refusals.refused(`reason ${i}`);
    }
    expect(lines).toHaveLength(1);
    advance(REFUSAL_LOG_INTERVAL_MS);
    refusals.refused('header "x-big" has a value of 17000 characters, more than 16384');
    expect(lines[1]).toBe('relay: 5 request heads refused since last report (last: header "x-big" has a value of 17000 characters, more than 16384)');
  });

  it("cuts a long reason to 256 characters", () => {
    const { refusals, lines } = log();
    refusals.refused("r".repeat(1000));
    expect(lines[0]).toBe(`relay: 1 request heads refused since last report (last: ${"r".repeat(256)}…)`);
  });
});

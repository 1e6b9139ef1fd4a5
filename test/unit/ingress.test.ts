/** The ingress a request arrived at, decided in one place: INGRESS_ID, else request.cf's colo (read once a while), else "local". */

import { describe, expect, it } from "vitest";
import type { Env } from "../../src/env.ts";
import { ingressId } from "../../src/ingress.ts";
import { IngressMemo } from "../../src/limiter/ingress-memo.ts";

const HASH = "ab".repeat(32);
const vars = (ingress: string) =>
  ({ INGRESS_ID: ingress, TOLLGATE_EDGE_ACCOUNT: "acct_dev", TUNNEL_DOMAIN: "localhost", TOLLGATE_API_KEYS: `acct_dev:${HASH}` }) as unknown as Env;

/** A request whose `cf` counts how often it is read (materialising it is the costly step). */
function requestAt(colo: string | undefined) {
  const request = new Request("http://gw.test/");
  let reads = 0;
  Object.defineProperty(request, "cf", {
    get() {
      reads++;
      return colo === undefined ? undefined : { colo };
    },
  });
  return { request, reads: () => reads };
}

describe("ingressId", () => {
  it("INGRESS_ID wins, and request.cf is not read at all", () => {
    const at = requestAt("FRA");
    expect(ingressId(vars("fra-1"), at.request, new IngressMemo())).toBe("fra-1");
    expect(at.reads()).toBe(0);
  });

  it("else the request's colo, read once while the isolate's memory is fresh; without cf, local", () => {
    let now = 0;
    const memo = new IngressMemo({ now: () => now, ttlMs: 1000 });
    const env = vars("");
    const first = requestAt("AMS");
    const second = requestAt("AMS");
    expect(ingressId(env, first.request, memo)).toBe("AMS");
    expect(ingressId(env, second.request, memo)).toBe("AMS");
    expect(first.reads() + second.reads()).toBe(1);
    now = 1000;
    expect(ingressId(env, requestAt(undefined).request, memo)).toBe("local");
    expect(ingressId(env, requestAt(undefined).request)).toBe("local");
  });
});

import { describe, expect, it } from "vitest";
import { HOST_CACHE_MS, HostCache } from "../../../src/tunnels/host-cache.ts";

const claim = (tunnelId: string, trafficPolicy?: unknown) => ({ accountId: "acct_a", sessionId: "ts_1", tunnelId, trafficPolicy });

describe("the isolate's host cache", () => {
  it("trusts a resolved host for HOST_CACHE_MS, then forgets it", () => {
    let now = 0;
    const hosts = new HostCache({ now: () => now });
    hosts.remember("shop", [claim("tn_1")]);
    now = HOST_CACHE_MS - 1;
    expect(hosts.get("shop")?.[0].tunnelId).toBe("tn_1");
    now = HOST_CACHE_MS;
    expect(hosts.get("shop")).toBeUndefined();
  });

  it("is bounded by bytes, counting each claim's traffic policy; the oldest go first", () => {
    const policy = { inbound: [{ actions: [{ type: "deny", config: { status_code: 403 } }] }], pad: "x".repeat(8_000) };
    const hosts = new HostCache({ now: () => 0, maxBytes: 100_000 });
    for (let i = 0; i < 100; i++) hosts.remember(`h${i}`, [claim(`tn_${i}`, policy)]);
    // each entry is charged ≥ 16 KB (8,000+ characters of JSON at 2 bytes each), so at most 6 fit
    expect(hosts.size).toBeLessThanOrEqual(6);
    expect(hosts.get("h99")?.[0].tunnelId).toBe("tn_99");
    expect(hosts.get("h0")).toBeUndefined();
  });

  it("makes a remembered claim's session id once, and again for a claim that replaced it", () => {
    const hosts = new HostCache({ now: () => 0 });
    const first = claim("tn_1");
    hosts.remember("shop", [first]);
    let made = 0;
    const make = () => ({ name: `id${++made}` }) as unknown as DurableObjectId;
    expect(hosts.sessionId("shop", first, make)).toBe(hosts.sessionId("shop", first, make));
    expect(made).toBe(1);
    const second = { ...claim("tn_1"), sessionId: "ts_2" };
    hosts.remember("shop", [second]);
    expect(hosts.sessionId("shop", first, make)).not.toBe(hosts.sessionId("shop", second, make));
    expect(made).toBe(3);
  });

  it("a claim larger than the whole bound is not kept", () => {
    const hosts = new HostCache({ now: () => 0, maxBytes: 1_000 });
    hosts.remember("big", [claim("tn_1", { pad: "x".repeat(2_000) })]);
    expect(hosts.size).toBe(0);
  });

  it("a pool's entry is charged every member's policy, and a member that left is dropped alone", () => {
    const policy = { pad: "x".repeat(4_000) };
    const hosts = new HostCache({ now: () => 0, maxBytes: 20_000 });
    hosts.remember("pool", [claim("tn_1", policy), claim("tn_2", policy), claim("tn_3", policy)]);
    // 3 × 8,000+ bytes is past the bound: a pool is not kept in part
    expect(hosts.size).toBe(0);
    hosts.remember("pool", [claim("tn_1"), claim("tn_2"), claim("tn_3")]);
    hosts.forgetMember("pool", "tn_2");
    expect(hosts.get("pool")?.map((member) => member.tunnelId)).toEqual(["tn_1", "tn_3"]);
    hosts.forgetMember("pool", "tn_1");
    hosts.forgetMember("pool", "tn_3");
    expect(hosts.get("pool")).toBeUndefined();
    expect(hosts.size).toBe(0);
  });

  it("keeps each member's session id apart", () => {
    const hosts = new HostCache({ now: () => 0 });
    const members = [claim("tn_1"), { ...claim("tn_2"), sessionId: "ts_2" }];
    hosts.remember("pool", members);
    let made = 0;
    const make = () => ({ name: `id${++made}` }) as unknown as DurableObjectId;
    const first = hosts.sessionId("pool", members[0], make);
    expect(hosts.sessionId("pool", members[1], make)).not.toBe(first);
    expect(hosts.sessionId("pool", members[0], make)).toBe(first);
    expect(made).toBe(2);
  });

  it("knows a remembered tunnel's account, stale or not, until its host or the member is forgotten", () => {
    let now = 0;
    const hosts = new HostCache({ now: () => now });
    hosts.remember("shop", [claim("tn_1"), { ...claim("tn_2"), accountId: "acct_b" }]);
    now = HOST_CACHE_MS * 10;
    expect(hosts.accountOf("tn_1")).toBe("acct_a");
    expect(hosts.accountOf("tn_2")).toBe("acct_b");
    hosts.forgetMember("shop", "tn_2");
    expect(hosts.accountOf("tn_2")).toBeUndefined();
    hosts.remember("shop", [claim("tn_3")]);
    expect(hosts.accountOf("tn_1")).toBeUndefined();
    expect(hosts.accountOf("tn_3")).toBe("acct_a");
    hosts.forget("shop");
    expect(hosts.accountOf("tn_3")).toBeUndefined();
  });
});

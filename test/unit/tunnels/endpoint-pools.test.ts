import { describe, expect, it } from "vitest";
import {
  decideClaim,
  HOST_GRACE_MS,
  MAX_POOL_MEMBERS,
  membersOf,
  needsHolderCheck,
  releaseClaim,
  sameRecord,
  type HostClaim,
  type HostRecord,
} from "../../../src/tunnels/host-claims.ts";
import { chooseMember } from "../../../src/tunnels/pool-choice.ts";

const member = (accountId: string, tunnelId: string, pooled = true): HostClaim => ({ accountId, sessionId: `ts_${tunnelId}`, tunnelId, pooled });
const online = () => true;
const offline = () => false;
/** A pool of acct_a's tunnels tn_1 … tn_n. */
const poolOf = (n: number): HostRecord => {
  const members = Array.from({ length: n }, (_, i) => member("acct_a", `tn_${i + 1}`));
  return n === 1 ? { claim: members[0] } : { claim: members[0], pool: members.slice(1) };
};
const ids = (record: HostRecord | undefined) => (record ? membersOf(record).map((claim) => claim.tunnelId) : []);

describe("who joins an endpoint pool", () => {
  it("a pooled tunnel of the same account joins a pooled holder without asking its session", () => {
    const record = poolOf(1);
    const joiner = member("acct_a", "tn_2");
    expect(needsHolderCheck(record, joiner)).toBe(false);
    expect(decideClaim(record, joiner, online, 0)).toEqual({ ok: true, record: { claim: record.claim, pool: [joiner] } });
  });

  it(`a pool takes at most ${MAX_POOL_MEMBERS} tunnels; the next is refused and the pool left as it is`, () => {
    const full = poolOf(MAX_POOL_MEMBERS);
    expect(decideClaim(full, member("acct_a", "tn_99"), online, 0)).toEqual({
      ok: false,
      reason: `already has ${MAX_POOL_MEMBERS} tunnels in its pool, the most a pool takes`,
    });
    expect(decideClaim(poolOf(MAX_POOL_MEMBERS - 1), member("acct_a", "tn_99"), online, 0)).toMatchObject({ ok: true });
  });

  it("another account's pooled tunnel is refused in the words any online holder gets, and grace still applies", () => {
    const record = poolOf(2);
    const thief = member("acct_b", "tn_x");
    expect(needsHolderCheck(record, thief)).toBe(true);
    expect(decideClaim(record, thief, online, 0)).toEqual({ ok: false, reason: "is in use by another online tunnel" });
    // every member found offline (the edge died): the account's grace starts, the other account waits it out
    const decision = decideClaim(record, thief, offline, 5_000);
    expect(decision).toMatchObject({ ok: false, noticed: { claim: record.claim, releasedAt: 5_000 } });
    expect(decision.ok ? undefined : decision.noticed?.pool).toBeUndefined();
    expect(decideClaim({ claim: record.claim, releasedAt: 5_000 }, thief, offline, 5_000 + HOST_GRACE_MS)).toMatchObject({ ok: true });
  });

  it("a pool with a member of another account is no pool anyone joins (a forged record cannot be joined into)", () => {
    const mixed: HostRecord = { claim: member("acct_a", "tn_1"), pool: [member("acct_b", "tn_2")] };
    expect(needsHolderCheck(mixed, member("acct_a", "tn_3"))).toBe(true);
    expect(needsHolderCheck(mixed, member("acct_b", "tn_3"))).toBe(true);
  });

  it("without opting in, a second tunnel is refused as today, and a pooled one does not join a holder that did not opt in", () => {
    expect(decideClaim(poolOf(1), member("acct_a", "tn_2", false), online, 0)).toEqual({
      ok: false,
      reason: "is in use by a pool of this account's tunnels; start this tunnel with pooling enabled to join it",
    });
    const single = { claim: member("acct_a", "tn_1", false) };
    expect(needsHolderCheck(single, member("acct_a", "tn_2"))).toBe(true);
    expect(decideClaim(single, member("acct_a", "tn_2"), online, 0)).toEqual({
      ok: false,
      reason: "is in use by another online tunnel of this account that did not enable pooling; start every tunnel of the URL with pooling enabled",
    });
    expect(decideClaim(single, member("acct_a", "tn_2", false), online, 0)).toEqual({ ok: false, reason: "is in use by another online tunnel" });
  });

  it("a member asking again keeps its place and the pool", () => {
    const record = poolOf(3);
    const again = { ...member("acct_a", "tn_2"), trafficPolicy: { inbound: [] } };
    expect(decideClaim(record, again, online, 0)).toEqual({ ok: true, record: { claim: record.claim, pool: [again, record.pool![1]] } });
  });

  it("a joiner of a random label stays random, so the label needs no quota hold while offline", () => {
    const record = { claim: { ...member("acct_a", "tn_1"), random: true } };
    expect(decideClaim(record, member("acct_a", "tn_2"), online, 0)).toMatchObject({ ok: true, record: { pool: [{ tunnelId: "tn_2", random: true }] } });
  });

  it("records differ when a member joined or left", () => {
    expect(sameRecord(poolOf(2), poolOf(2))).toBe(true);
    expect(sameRecord(poolOf(2), poolOf(3))).toBe(false);
    expect(sameRecord(poolOf(1), { claim: poolOf(1).claim, pool: [] })).toBe(true);
  });
});

describe("members leaving a pool", () => {
  it("a member leaving takes only itself out; the oldest left serves on", () => {
    expect(ids(releaseClaim(poolOf(3), "tn_1", 0))).toEqual(["tn_2", "tn_3"]);
    expect(ids(releaseClaim(poolOf(3), "tn_2", 0, true))).toEqual(["tn_1", "tn_3"]);
    expect(releaseClaim(poolOf(2), "tn_1", 0)).toEqual({ claim: member("acct_a", "tn_2") });
  });

  it("the host is released only when the last member leaves: into the grace when its session ended, free when stopped", () => {
    const last = releaseClaim(releaseClaim(poolOf(2), "tn_1", 0), "tn_2", 7);
    expect(last).toEqual({ claim: member("acct_a", "tn_2"), releasedAt: 7 });
    expect(releaseClaim(releaseClaim(poolOf(2), "tn_2", 0, true), "tn_1", 0, true)).toBeUndefined();
  });

  it("a release by a tunnel outside the pool changes nothing", () => {
    const record = poolOf(2);
    expect(releaseClaim(record, "tn_9", 0)).toBe(record);
    expect(releaseClaim(record, "tn_9", 0, true)).toBe(record);
  });
});

describe("choosing a member", () => {
  it("each member is chosen for its share of [0, 1)", () => {
    const members = ["a", "b", "c", "d"];
    expect([0, 0.24, 0.25, 0.5, 0.99].map((r) => chooseMember(members, () => r))).toEqual(["a", "a", "b", "c", "d"]);
    expect(chooseMember(members, () => 1)).toBe("d");
    expect(chooseMember(["only"], () => 0.7)).toBe("only");
  });

  it("spreads evenly: a thousand evenly spaced draws give each of 4 members 250", () => {
    const counts = new Map<string, number>();
    for (let i = 0; i < 1000; i++) {
      const chosen = chooseMember(["a", "b", "c", "d"], () => i / 1000);
      counts.set(chosen, (counts.get(chosen) ?? 0) + 1);
    }
    expect([...counts.values()]).toEqual([250, 250, 250, 250]);
  });

  it("an empty pool is a bug, not a choice", () => {
    expect(() => chooseMember([], () => 0)).toThrow("a pool has at least one member");
  });
});

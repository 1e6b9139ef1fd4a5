import { describe, expect, it } from "vitest";
import { decideClaim, HOST_GRACE_MS, isExpired, needsHolderCheck, releaseClaim, sameRecord, type HostClaim } from "../../../src/tunnels/host-claims.ts";
import { isReservedLabel } from "../../../src/tunnels/hostnames.ts";

const claimOf = (accountId: string, tunnelId: string): HostClaim => ({ accountId, sessionId: `ts_${tunnelId}`, tunnelId });
const online = () => true;
const offline = () => false;

describe("who may claim a host label", () => {
  it("a free label goes to whoever claims it", () => {
    expect(decideClaim(undefined, claimOf("acct_a", "tn_1"), online, 0)).toEqual({ ok: true, record: { claim: claimOf("acct_a", "tn_1") } });
  });

  it("nobody takes a label whose tunnel is online, not even its own account with another tunnel", () => {
    const record = { claim: claimOf("acct_a", "tn_1") };
    expect(decideClaim(record, claimOf("acct_b", "tn_2"), online, 0)).toEqual({ ok: false, reason: "is in use by another online tunnel" });
    expect(decideClaim(record, claimOf("acct_a", "tn_2"), online, 0)).toMatchObject({ ok: false });
  });

  it("after its tunnel went offline, only its account may claim it until the grace period is over", () => {
    const released = releaseClaim({ claim: claimOf("acct_a", "tn_1") }, "tn_1", 1_000)!;
    expect(released.releasedAt).toBe(1_000);
    const refused = decideClaim(released, claimOf("acct_b", "tn_2"), offline, 1_000 + HOST_GRACE_MS - 1);
    expect(refused).toMatchObject({
      ok: false,
      reason: `is reserved for the account that used it last, until ${new Date(1_000 + HOST_GRACE_MS).toISOString()}`,
    });
    expect(decideClaim(released, claimOf("acct_a", "tn_3"), offline, 2_000)).toEqual({ ok: true, record: { claim: claimOf("acct_a", "tn_3") } });
    expect(decideClaim(released, claimOf("acct_b", "tn_2"), offline, 1_000 + HOST_GRACE_MS)).toMatchObject({ ok: true });
  });

  it("a holder found offline without having said so (the edge died) starts its grace when first noticed", () => {
    const decision = decideClaim({ claim: claimOf("acct_a", "tn_1") }, claimOf("acct_b", "tn_2"), offline, 5_000);
    expect(decision).toMatchObject({ ok: false, noticed: { claim: claimOf("acct_a", "tn_1"), releasedAt: 5_000 } });
  });

  it("a refusal on a record that was already released notices nothing, so nothing is written", () => {
    const released = { claim: claimOf("acct_a", "tn_1"), releasedAt: 1_000 };
    const decision = decideClaim(released, claimOf("acct_b", "tn_2"), offline, 2_000);
    expect(decision.ok).toBe(false);
    expect(decision).not.toHaveProperty("noticed");
  });

  it("the holder is asked only while the record says it is online and another tunnel claims", () => {
    const record = { claim: claimOf("acct_a", "tn_1") };
    expect(needsHolderCheck(record, claimOf("acct_b", "tn_2"))).toBe(true);
    expect(needsHolderCheck(record, claimOf("acct_a", "tn_1"))).toBe(false);
    expect(needsHolderCheck({ ...record, releasedAt: 1 }, claimOf("acct_b", "tn_2"))).toBe(false);
    expect(needsHolderCheck(undefined, claimOf("acct_b", "tn_2"))).toBe(false);
  });

  it("records are the same only with the same holder in the same state", () => {
    const record = { claim: claimOf("acct_a", "tn_1") };
    expect(sameRecord(record, { claim: claimOf("acct_a", "tn_1") })).toBe(true);
    expect(sameRecord(record, { claim: claimOf("acct_a", "tn_1"), releasedAt: 5 })).toBe(false);
    expect(sameRecord(record, { claim: claimOf("acct_a", "tn_2") })).toBe(false);
    expect(sameRecord(record, undefined)).toBe(false);
    expect(sameRecord(undefined, undefined)).toBe(true);
  });

  it("the same account taking back a random label keeps it random", () => {
    const released = { claim: { ...claimOf("acct_a", "tn_1"), random: true }, releasedAt: 0 };
    expect(decideClaim(released, claimOf("acct_a", "tn_2"), offline, 1)).toEqual({
      ok: true,
      record: { claim: { ...claimOf("acct_a", "tn_2"), random: true } },
    });
  });

  it("a release by a tunnel that no longer holds the label changes nothing", () => {
    const record = { claim: claimOf("acct_a", "tn_2") };
    expect(releaseClaim(record, "tn_1", 0)).toBe(record);
  });

  it("a released record expires at the end of its grace period", () => {
    const released = { claim: claimOf("acct_a", "tn_1"), releasedAt: 0 };
    expect(isExpired(released, HOST_GRACE_MS - 1)).toBe(false);
    expect(isExpired(released, HOST_GRACE_MS)).toBe(true);
    expect(isExpired({ claim: claimOf("acct_a", "tn_1") }, Number.MAX_SAFE_INTEGER)).toBe(false);
  });

  it("names people trust on sight are reserved", () => {
    for (const label of ["www", "api", "admin", "login", "auth", "status"]) expect(isReservedLabel(label)).toBe(true);
    expect(isReservedLabel("myapp")).toBe(false);
  });
});

/**
 * Claims that interleave inside one real TunnelHost object (a Durable Object runs other calls while one awaits
 * the holder's session), sessions re-asserting their hosts on renewal, and host quotas that ordinary
 * start/stop use does not exhaust.
 */

import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { ClaimResult, TunnelHost } from "../../../src/tunnels/host-object.ts";
import { HOST_GRACE_MS, MAX_HOSTS_PER_ACCOUNT, type HostClaim, type HostRecord } from "../../../src/tunnels/host-claims.ts";
import { TEST_KEYS } from "../management/keys.ts";
import { connectAgent, type FakeAgent } from "./fake-agent.ts";

const agents: FakeAgent[] = [];
afterEach(() => {
  for (const agent of agents.splice(0)) if (!agent.closed) agent.close();
});

async function agentOf(key: keyof typeof TEST_KEYS) {
  const { agent, welcome } = await connectAgent(TEST_KEYS[key].key);
  agents.push(agent);
  return { agent, sessionId: welcome.session_id };
}

const hostStub = (label: string) => env.TUNNEL_HOST.get(env.TUNNEL_HOST.idFromName(label));
const sessionStub = (sessionId: string) => env.TUNNEL_SESSION.get(env.TUNNEL_SESSION.idFromName(sessionId));
const labelOf = (publicUrl: string | undefined) => new URL(publicUrl!).hostname.split(".")[0];

type HolderState = "online" | "offline" | "unknown";
/** A pending question to the holder's session, answered when the test says so. */
interface HolderCheck {
  readonly holder: HostClaim;
  answer(state: HolderState): void;
}

/** Replaces the object's question to the holder's session with one the test answers, in the order it chooses. */
function slowHolderChecks(instance: TunnelHost): HolderCheck[] {
  const checks: HolderCheck[] = [];
  (instance as unknown as { holderState(holder: HostClaim): Promise<HolderState> }).holderState = (holder) =>
    new Promise((resolve) => checks.push({ holder, answer: resolve }));
  return checks;
}

/** Host names an account holds now (online, or in their grace period), as its registry counts them. */
function heldHosts(accountId: string): Promise<number> {
  return runInDurableObject(
    env.TUNNEL_REGISTRY.get(env.TUNNEL_REGISTRY.idFromName(accountId)),
    (_instance, state) => state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM held_hosts WHERE held_until > ?", Date.now()).one().n,
  );
}

const claimOf = (accountId: string, sessionId: string, tunnelId: string): HostClaim => ({ accountId, sessionId, tunnelId });

describe("two claims inside one host object", () => {
  it("after an edge reload the owner's reconnecting claim wins, and another account's refusal writes nothing over it", async () => {
    const stale = claimOf("acct_dev", "ts_before_reload", "tn_before_reload");
    const owner = claimOf("acct_dev", "ts_owner_again", "tn_owner_again");
    const thief = claimOf("acct_other", "ts_thief", "tn_thief");
    await runInDurableObject(hostStub("race-reload"), async (instance: TunnelHost, state) => {
      state.storage.kv.put("host", { claim: stale } satisfies HostRecord); // online, as the edge left it when it died
      const checks = slowHolderChecks(instance);
      const ownerClaim = instance.claim(owner);
      const thiefClaim = instance.claim(thief);
      await vi.waitFor(() => expect(checks).toHaveLength(2));
      expect(checks.map((check) => check.holder.tunnelId)).toEqual([stale.tunnelId, stale.tunnelId]);

      checks[0].answer("offline");
      expect(await ownerClaim).toEqual({ ok: true, random: false } satisfies ClaimResult);
      // The thief's answer is about the record before the owner's claim: it must ask about the owner instead.
      checks[1].answer("offline");
      await vi.waitFor(() => expect(checks).toHaveLength(3));
      expect(checks[2].holder.tunnelId).toBe(owner.tunnelId);
      checks[2].answer("online");
      expect(await thiefClaim).toEqual({ ok: false, reason: "is in use by another online tunnel" });

      expect(state.storage.kv.get<HostRecord>("host")).toEqual({ claim: owner });
      expect(instance.resolve()).toEqual(owner);
    });
  });

  it("a claim whose holder could not be asked is refused without marking the holder offline", async () => {
    const holder = claimOf("acct_dev", "ts_busy", "tn_busy");
    await runInDurableObject(hostStub("race-unknown"), async (instance: TunnelHost, state) => {
      state.storage.kv.put("host", { claim: holder } satisfies HostRecord);
      const checks = slowHolderChecks(instance);
      const claim = instance.claim(claimOf("acct_other", "ts_x", "tn_x"));
      await vi.waitFor(() => expect(checks).toHaveLength(1));
      checks[0].answer("unknown");
      expect(await claim).toEqual({ ok: false, reason: "is held by a tunnel whose session could not be asked; try again" });
      expect(state.storage.kv.get<HostRecord>("host")).toEqual({ claim: holder });
    });
  });

  it("a claim that keeps finding the record changed gives up after a few rounds, writing nothing", async () => {
    await runInDurableObject(hostStub("race-churn"), async (instance: TunnelHost, state) => {
      state.storage.kv.put("host", { claim: claimOf("acct_dev", "ts_0", "tn_0") } satisfies HostRecord);
      const checks = slowHolderChecks(instance);
      const claim = instance.claim(claimOf("acct_other", "ts_x", "tn_x"));
      for (let round = 1; ; round++) {
        await vi.waitFor(() => expect(checks.length).toBeGreaterThanOrEqual(round));
        // Another tunnel of the owner takes the host while each answer is on its way.
        state.storage.kv.put("host", { claim: claimOf("acct_dev", `ts_${round}`, `tn_${round}`) } satisfies HostRecord);
        checks[round - 1].answer("offline");
        const settled = await Promise.race([claim, new Promise((resolve) => setTimeout(() => resolve(undefined), 0))]);
        if (settled) {
          expect(settled).toEqual({ ok: false, reason: "is being claimed by other tunnels at this moment; try again" });
          break;
        }
      }
      expect(state.storage.kv.get<HostRecord>("host")?.releasedAt).toBeUndefined();
    });
  });
});

describe("a session re-asserts its hosts when it renews", () => {
  it("a host marked offline while its session was online is online again after the session's next renewal", async () => {
    const { agent, sessionId } = await agentOf("dev");
    const tunnel = await agent.startOk({ subdomain: "reassert-me" });
    await runInDurableObject(hostStub("reassert-me"), (_instance, state) => {
      const record = state.storage.kv.get<HostRecord>("host")!;
      state.storage.kv.put("host", { ...record, releasedAt: Date.now() });
    });
    expect(await hostStub("reassert-me").resolve()).toBeNull();
    await runDurableObjectAlarm(sessionStub(sessionId));
    expect(await hostStub("reassert-me").resolve()).toMatchObject({ tunnelId: tunnel.id, sessionId });
  });

  it("a tunnel whose host another tunnel holds now is stopped, and its agent told why", async () => {
    const { agent, sessionId } = await agentOf("dev");
    const tunnel = await agent.startOk({ subdomain: "taken-over" });
    await runInDurableObject(hostStub("taken-over"), (_instance, state) => {
      state.storage.kv.put("host", { claim: claimOf("acct_dev", "ts_elsewhere", "tn_elsewhere") } satisfies HostRecord);
    });
    await runDurableObjectAlarm(sessionStub(sessionId));
    const stopped = await agent.next("tunnel_stopped", (frame) => frame.tunnel_id === tunnel.id);
    expect(stopped.reason).toBe("its host name 'taken-over' is served by another tunnel now");
    expect(await hostStub("taken-over").resolve()).toMatchObject({ tunnelId: "tn_elsewhere" });
  });
});

describe("host quotas under ordinary use", () => {
  it(`${MAX_HOSTS_PER_ACCOUNT + 1} start/stop cycles of random tunnels never exhaust the quota`, { timeout: 60_000 }, async () => {
    const { agent } = await agentOf("other");
    for (let i = 0; i < MAX_HOSTS_PER_ACCOUNT + 1; i++) {
      const tunnel = await agent.startOk({ name: `cycle${i}` });
      agent.send({ type: "stop_tunnel", request_id: 10_000 + i, tunnel_id: tunnel.id });
      await agent.next("tunnel_stopped", (frame) => frame.request_id === 10_000 + i);
    }
  });

  it("a session that ends releases its random labels from the quota at once; chosen subdomains stay held", async () => {
    const { agent } = await agentOf("other");
    const before = await heldHosts("acct_other");
    await agent.startOk({ name: "random-a" });
    await agent.startOk({ name: "random-b" });
    await agent.startOk({ name: "chosen", subdomain: "kept-after-drop" });
    expect(await heldHosts("acct_other")).toBe(before + 3);
    agent.close();
    await vi.waitFor(async () => expect(await heldHosts("acct_other")).toBe(before + 1), { timeout: 10_000 });
  });

  it("asking again for a subdomain one's own online tunnel holds does not take it off the quota", async () => {
    const { agent } = await agentOf("other");
    const before = await heldHosts("acct_other");
    const started = [];
    for (let i = 0; i < 3; i++) {
      started.push(await agent.startOk({ name: `twice${i}`, subdomain: `asked-twice-${i}` }));
      expect(await agent.start({ name: `again${i}`, subdomain: `asked-twice-${i}` })).toMatchObject({ type: "tunnel_failed", code: "subdomain_in_use" });
    }
    expect(await heldHosts("acct_other")).toBe(before + 3);
    for (const [i, tunnel] of started.entries()) {
      agent.send({ type: "stop_tunnel", request_id: 30_000 + i, tunnel_id: tunnel.id });
      await agent.next("tunnel_stopped", (frame) => frame.request_id === 30_000 + i);
    }
  });

  it("a stopped tunnel's name does not come back on the quota when its session renews", async () => {
    const { agent, sessionId } = await agentOf("other");
    const before = await heldHosts("acct_other");
    const kept = await agent.startOk({ name: "kept" });
    const stopped = await agent.startOk({ name: "stopped" });
    agent.send({ type: "stop_tunnel", request_id: 40_000, tunnel_id: stopped.id });
    await agent.next("tunnel_stopped", (frame) => frame.request_id === 40_000);
    await runDurableObjectAlarm(sessionStub(sessionId));
    expect(await heldHosts("acct_other")).toBe(before + 1);
    expect(kept.id).toBeTruthy();
  });

  it("a subdomain stopped on purpose is free for another account at once", async () => {
    const { agent } = await agentOf("dev");
    const tunnel = await agent.startOk({ subdomain: "stopped-on-purpose" });
    agent.send({ type: "stop_tunnel", request_id: 77, tunnel_id: tunnel.id });
    await agent.next("tunnel_stopped", (frame) => frame.request_id === 77);
    const other = await agentOf("other");
    expect(labelOf((await other.agent.startOk({ subdomain: "stopped-on-purpose" })).public_url)).toBe("stopped-on-purpose");
  });

  it("when the quota is full of subdomains whose sessions ended, the refusal says when the next one frees up", { timeout: 90_000 }, async () => {
    const first = await agentOf("quota");
    for (let i = 0; i < MAX_HOSTS_PER_ACCOUNT; i++) await first.agent.startOk({ name: `q${i}`, subdomain: `quota-held-${i}` });
    first.agent.close();
    const registry = env.TUNNEL_REGISTRY.get(env.TUNNEL_REGISTRY.idFromName(TEST_KEYS.quota.account));
    await vi.waitFor(async () => expect(await registry.list()).toHaveLength(0), { timeout: 10_000 });

    const { agent } = await agentOf("quota");
    const before = Date.now();
    const refused = await agent.start({ name: "one-more" });
    expect(refused).toMatchObject({ type: "tunnel_failed", code: "host_quota_exceeded" });
    const message = (refused as { message: string }).message;
    expect(message).toMatch(
      new RegExp(
        `^the account already holds ${MAX_HOSTS_PER_ACCOUNT} host names, the most it may \\(0 of online tunnels, ${MAX_HOSTS_PER_ACCOUNT} kept after their tunnels went offline\\); the next one frees up at (\\S+) \\(in \\d+ s\\), or stop one of its tunnels$`,
      ),
    );
    const freesAt = Date.parse(/frees up at (\S+) /.exec(message)![1]);
    expect(freesAt).toBeGreaterThan(before);
    expect(freesAt).toBeLessThanOrEqual(Date.now() + HOST_GRACE_MS);
  });
});

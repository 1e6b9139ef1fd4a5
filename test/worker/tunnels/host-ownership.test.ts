/** Public host names belong to the account that claimed them: no takeover after a disconnect, reserved names, a quota. */

import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { HOST_GRACE_MS, MAX_HOSTS_PER_ACCOUNT, type HostRecord } from "../../../src/tunnels/host-claims.ts";
import { listOnlineTunnels } from "../../../src/tunnels/registry-client.ts";
import { TEST_KEYS } from "../management/keys.ts";
import { connectAgent, type FakeAgent } from "./fake-agent.ts";

const agents: FakeAgent[] = [];
afterEach(() => {
  for (const agent of agents.splice(0)) if (!agent.closed) agent.close();
});

async function agentOf(key: keyof typeof TEST_KEYS) {
  const { agent } = await connectAgent(TEST_KEYS[key].key);
  agents.push(agent);
  return agent;
}

const hostStub = (label: string) => env.TUNNEL_HOST.get(env.TUNNEL_HOST.idFromName(label));

/** Host names an account holds now (online, or in their grace period), as its registry counts them. */
function heldHosts(accountId: string): Promise<number> {
  return runInDurableObject(
    env.TUNNEL_REGISTRY.get(env.TUNNEL_REGISTRY.idFromName(accountId)),
    (_instance, state) => state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM held_hosts WHERE held_until > ?", Date.now()).one().n,
  );
}

async function disconnected(agent: FakeAgent, accountId: string, tunnelId: string): Promise<void> {
  agent.close();
  await vi.waitFor(async () => expect((await listOnlineTunnels(env, accountId)).map((tunnel) => tunnel.id)).not.toContain(tunnelId), { timeout: 10_000 });
}

describe("host names belong to their account", () => {
  it("another account cannot take a subdomain while its owner's agent reconnects; the owner gets it back", async () => {
    const owner = await agentOf("dev");
    const first = await owner.startOk({ subdomain: "shop" });
    await disconnected(owner, "acct_dev", first.id);

    const thief = await agentOf("other");
    const refused = await thief.start({ subdomain: "shop" });
    expect(refused).toMatchObject({ type: "tunnel_failed", code: "subdomain_in_use" });
    expect((refused as { message: string }).message).toMatch(/^subdomain 'shop' is reserved for the account that used it last, until \d{4}-/);

    const back = await (await agentOf("dev")).startOk({ subdomain: "shop" });
    expect(back.public_url).toBe(first.public_url);
  });

  it("after the grace period the name is free for anyone, and its record is forgotten", async () => {
    const owner = await agentOf("dev");
    const tunnel = await owner.startOk({ subdomain: "garden" });
    await disconnected(owner, "acct_dev", tunnel.id);
    // The grace period passes: move the release back by HOST_GRACE_MS instead of waiting ten minutes.
    await runInDurableObject(hostStub("garden"), async (_instance, state) => {
      const record = state.storage.kv.get<HostRecord>("host")!;
      expect(record.releasedAt).toBeTypeOf("number");
      state.storage.kv.put("host", { ...record, releasedAt: record.releasedAt! - HOST_GRACE_MS });
    });
    expect(await runDurableObjectAlarm(hostStub("garden"))).toBe(true);
    expect(await runInDurableObject(hostStub("garden"), (_instance, state) => state.storage.kv.get("host"))).toBeUndefined();
    const other = await (await agentOf("other")).startOk({ subdomain: "garden" });
    expect(other.public_url).toContain("garden.");
  });

  it("reserved names are refused to every account", async () => {
    const agent = await agentOf("dev");
    for (const subdomain of ["www", "api", "admin", "login"]) {
      expect(await agent.start({ subdomain })).toMatchObject({
        type: "tunnel_failed",
        code: "subdomain_reserved",
        message: `subdomain '${subdomain}' is reserved: names such as www, api, admin and login are never handed out`,
      });
    }
  });

  it(`an account holds at most ${MAX_HOSTS_PER_ACCOUNT} host names; a tunnel stopped on purpose gives its name back at once`, {
    timeout: 60_000,
  }, async () => {
    const agent = await agentOf("other");
    const started = [];
    for (let i = await heldHosts("acct_other"); i < MAX_HOSTS_PER_ACCOUNT; i++) started.push(await agent.startOk({ name: `t${i}` }));
    expect(await heldHosts("acct_other")).toBe(MAX_HOSTS_PER_ACCOUNT);
    const over = await agent.start({ name: "one-too-many" });
    expect(over).toMatchObject({ type: "tunnel_failed", code: "host_quota_exceeded" });
    // Earlier tests of this file left acct_other's subdomain 'garden' in its grace period.
    const offline = MAX_HOSTS_PER_ACCOUNT - started.length;
    expect((over as { message: string }).message).toMatch(
      new RegExp(
        `^the account already holds ${MAX_HOSTS_PER_ACCOUNT} host names, the most it may \\(${started.length} of online tunnels, ${offline} kept after their tunnels went offline\\); ${offline > 0 ? "the next one frees up at \\S+ \\(in \\d+ s\\), or stop one of its tunnels" : "stop one of its tunnels first"}$`,
      ),
    );

    agent.send({ type: "stop_tunnel", request_id: 9_999, tunnel_id: started[0].id });
    await agent.next("tunnel_stopped", (frame) => frame.request_id === 9_999);
    expect(await heldHosts("acct_other")).toBe(MAX_HOSTS_PER_ACCOUNT - 1);
    expect(await agent.start({ name: "in-its-place" })).toMatchObject({ type: "tunnel_started" });
    for (const tunnel of started.slice(1)) {
      agent.send({ type: "stop_tunnel", request_id: 20_000, tunnel_id: tunnel.id });
      await agent.next("tunnel_stopped", (frame) => frame.tunnel_id === tunnel.id);
    }
  });
});

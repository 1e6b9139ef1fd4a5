/** Endpoint pools: tunnels of one account that opt in share a public URL; requests spread over the live members. */

import { env, runInDurableObject, SELF } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { MAX_POOL_MEMBERS } from "../../../src/tunnels/host-claims.ts";
import type { FrameOf } from "../../../src/relay/index.ts";
import { listOnlineTunnels } from "../../../src/tunnels/registry-client.ts";
import { TunnelRegistry } from "../../../src/tunnels/registry-object.ts";
import { TEST_KEYS } from "../management/keys.ts";
import { connectAgent, publicFetch, type FakeAgent } from "./fake-agent.ts";

const agents: FakeAgent[] = [];
const stops: Array<() => void> = [];
afterEach(() => {
  for (const stop of stops.splice(0)) stop();
  for (const agent of agents.splice(0)) if (!agent.closed) agent.close();
});

async function agentOf(key: keyof typeof TEST_KEYS = "dev") {
  const { agent } = await connectAgent(TEST_KEYS[key].key);
  agents.push(agent);
  return agent;
}

/** Answers every request the agent is sent with 200 and `name`, until the test ends or the agent closes. */
function serve(agent: FakeAgent, name: string): void {
  let running = true;
  stops.push(() => {
    running = false;
  });
  void (async () => {
    while (running && !agent.closed) {
      let head: FrameOf<"request_head">;
      try {
        head = await agent.next("request_head", () => true, 60_000);
      } catch {
        return;
      }
      agent.send({ type: "response_head", stream: head.stream, status: 200, headers: [["content-type", "text/plain"]] });
      agent.send({ type: "data", stream: head.stream, seq: 0, bytes: new TextEncoder().encode(name) });
      agent.send({ type: "end", stream: head.stream, count: 1 });
    }
  })();
}

/** Sends `n` GETs one after another; answers who served each (or the status of a failure). */
async function servedBy(publicUrl: string, n: number): Promise<string[]> {
  const served: string[] = [];
  for (let i = 0; i < n; i++) {
    const response = await publicFetch(publicUrl, `/${i}`);
    served.push(response.status === 200 ? await response.text() : `status ${response.status}: ${await response.text()}`);
  }
  return served;
}

/**
 * Whether the account's quota still counts `label` for the tunnel `tunnelId` (its row is kept; no clock is read,
 * so a slow machine cannot make the lease look expired).
 */
function countedFor(accountId: string, label: string, tunnelId: string): Promise<boolean> {
  return runInDurableObject(
    env.TUNNEL_REGISTRY.get(env.TUNNEL_REGISTRY.idFromName(accountId)),
    (_instance, state) =>
      state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM held_hosts WHERE label = ? AND tunnel_id = ?", label, tunnelId).one().n > 0,
  );
}

const pooled = (subdomain: string) => ({ subdomain, pooling_enabled: true });

async function sessionGone(accountId: string, tunnelId: string): Promise<void> {
  await vi.waitFor(async () => expect((await listOnlineTunnels(env, accountId)).map((tunnel) => tunnel.id)).not.toContain(tunnelId), {
    timeout: 10_000,
    interval: 50,
  });
}

describe("endpoint pools", () => {
  it("two agents of one account that opt in share a URL, both serve, and GET /tunnels lists each member", async () => {
    const [a, b] = [await agentOf("dev"), await agentOf("devSecond")];
    const first = await a.startOk(pooled("pool-both"));
    const second = await b.startOk(pooled("pool-both"));
    expect(second.public_url).toBe(first.public_url);
    serve(a, "a");
    serve(b, "b");

    const served = await servedBy(first.public_url!, 40);
    // a random pick per request: each member misses all 40 with probability 2^-40
    expect(new Set(served)).toEqual(new Set(["a", "b"]));

    const listed = await SELF.fetch("http://127.0.0.1:8787/tunnels", {
      headers: { authorization: `Bearer ${TEST_KEYS.dev.key}`, "service-version": "2" },
    });
    const members = ((await listed.json()) as { tunnels: Array<{ id: string; public_url?: string; pooling_enabled?: boolean }> }).tunnels.filter(
      (tunnel) => tunnel.public_url === first.public_url,
    );
    expect(members.map((tunnel) => tunnel.id).sort()).toEqual([first.id, second.id].sort());
    expect(members.every((tunnel) => tunnel.pooling_enabled === true)).toBe(true);
  });

  it("a member that disconnects is taken out at once: every later request is served by the others", async () => {
    const [a, b] = [await agentOf(), await agentOf()];
    const first = await a.startOk(pooled("pool-failover"));
    await b.startOk(pooled("pool-failover"));
    serve(a, "a");
    serve(b, "b");
    // this isolate now remembers both members
    expect(new Set(await servedBy(first.public_url!, 30))).toEqual(new Set(["a", "b"]));

    a.close();
    await sessionGone("acct_dev", first.id);
    // the isolate's memory still names a: a request sent there is told it is gone and goes to b instead
    expect(await servedBy(first.public_url!, 30)).toEqual(Array(30).fill("b"));
  });

  it("a request with a body sent to a member that just left fails 502 once, as a request in flight would; the rest go to the others", async () => {
    const [a, b] = [await agentOf(), await agentOf()];
    const first = await a.startOk(pooled("pool-body"));
    await b.startOk(pooled("pool-body"));
    serve(a, "a");
    serve(b, "b");
    expect(new Set(await servedBy(first.public_url!, 30))).toEqual(new Set(["a", "b"]));
    a.close();
    await sessionGone("acct_dev", first.id);

    const answers: string[] = [];
    for (let i = 0; i < 30; i++) {
      const response = await publicFetch(first.public_url!, "/upload", { method: "POST", body: `payload ${i}` });
      answers.push(response.status === 200 ? await response.text() : `${response.status} ${((await response.json()) as { msg: string }).msg}`);
    }
    // the isolate still remembers a until one request finds it gone (each request picks a with chance 1/2)
    const failed = answers.filter((answer) => answer !== "b");
    expect(failed).toEqual(["502 The tunnel agent did not complete the response: the pool member chosen for this request went offline; send it again"]);
    expect(answers.slice(answers.indexOf(failed[0]) + 1)).toEqual(Array(29 - answers.indexOf(failed[0])).fill("b"));
  });

  it("the host is freed only when the last member leaves", async () => {
    const [a, b] = [await agentOf(), await agentOf()];
    const first = await a.startOk(pooled("pool-last"));
    const second = await b.startOk(pooled("pool-last"));
    serve(b, "b");
    a.send({ type: "stop_tunnel", request_id: 90, tunnel_id: first.id });
    await a.next("tunnel_stopped", (frame) => frame.request_id === 90);
    expect(await servedBy(first.public_url!, 5)).toEqual(Array(5).fill("b"));
    // still held: another account cannot take it, and this account's tunnel without pooling cannot either
    expect(await (await agentOf("other")).start(pooled("pool-last"))).toMatchObject({ type: "tunnel_failed", code: "subdomain_in_use" });

    b.send({ type: "stop_tunnel", request_id: 91, tunnel_id: second.id });
    await b.next("tunnel_stopped", (frame) => frame.request_id === 91);
    expect((await publicFetch(first.public_url!)).status).toBe(404);
    // stopped on purpose, the last one gives the name back at once, to anyone
    expect(await (await agentOf("other")).start({ subdomain: "pool-last" })).toMatchObject({ type: "tunnel_started" });
  });

  it("a pool counts as one host name of the account's quota, still counted for the members left when one leaves", async () => {
    const [a, b] = [await agentOf(), await agentOf()];
    const first = await a.startOk(pooled("pool-quota"));
    const joiner = await b.startOk(pooled("pool-quota"));
    const rows = await runInDurableObject(
      env.TUNNEL_REGISTRY.get(env.TUNNEL_REGISTRY.idFromName("acct_dev")),
      (_instance, state) => state.storage.sql.exec<{ n: number }>("SELECT COUNT(DISTINCT label) AS n FROM held_hosts WHERE label = 'pool-quota'").one().n,
    );
    expect(rows).toBe(1);
    // the joiner leaving on purpose (before pools a label had one row, the last member's, and this freed it)
    b.send({ type: "stop_tunnel", request_id: 92, tunnel_id: joiner.id });
    await b.next("tunnel_stopped", (frame) => frame.request_id === 92);
    expect(await countedFor("acct_dev", "pool-quota", first.id)).toBe(true);
  });

  it("a registry from before pools keeps its held host names under the new key", async () => {
    await runInDurableObject(env.TUNNEL_REGISTRY.get(env.TUNNEL_REGISTRY.idFromName("acct_migrated")), (_instance, state) => {
      const sql = state.storage.sql;
      sql.exec("DROP TABLE held_hosts");
      sql.exec("CREATE TABLE held_hosts (label TEXT PRIMARY KEY, tunnel_id TEXT NOT NULL, session_id TEXT NOT NULL, held_until INTEGER NOT NULL)");
      sql.exec("INSERT INTO held_hosts VALUES ('kept', 'tn_old', 'ts_old', ?)", Date.now() + 3_600_000);
      // The version as registries recorded it before src/sqlite-migrations.ts: a meta row, no schema_migrations.
      sql.exec("DROP TABLE schema_migrations");
      sql.exec("CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL)");
      sql.exec("INSERT INTO meta VALUES ('schema', 3)");
      const migrated = new TunnelRegistry(state, env);
      expect(sql.exec("SELECT label, tunnel_id FROM held_hosts").toArray()).toEqual([{ label: "kept", tunnel_id: "tn_old" }]);
      expect(sql.exec<{ value: number }>("SELECT max(version) AS value FROM schema_migrations").one().value).toBe(4);
      // a second row of the same label is a pool member now, not a conflict
      sql.exec("INSERT INTO held_hosts VALUES ('kept', 'tn_new', 'ts_new', ?)", Date.now() + 3_600_000);
      expect(migrated.holdHost("other", "tn_x", "ts_x", 1, 60_000)).toMatchObject({ ok: false, held: 1 });
    });
  });

  it("without opting in, a second tunnel for a taken URL is refused as before, whichever side did not opt in", async () => {
    const holder = await agentOf();
    await holder.startOk({ subdomain: "pool-single" });
    const joiner = await agentOf();
    expect(await joiner.start({ subdomain: "pool-single" })).toMatchObject({
      type: "tunnel_failed",
      code: "subdomain_in_use",
      message: "subdomain 'pool-single' is in use by another online tunnel",
    });
    expect(await joiner.start(pooled("pool-single"))).toMatchObject({
      type: "tunnel_failed",
      code: "subdomain_in_use",
      message:
        "subdomain 'pool-single' is in use by another online tunnel of this account that did not enable pooling; start every tunnel of the URL with pooling enabled",
    });

    await holder.startOk(pooled("pool-optin"));
    expect(await joiner.start({ subdomain: "pool-optin" })).toMatchObject({
      type: "tunnel_failed",
      code: "subdomain_in_use",
      message: "subdomain 'pool-optin' is in use by a pool of this account's tunnels; start this tunnel with pooling enabled to join it",
    });
  });

  it("another account can never join a pool, and its agent never sees the pool's traffic", async () => {
    const owner = await agentOf();
    const tunnel = await owner.startOk(pooled("pool-hostile"));
    serve(owner, "owner");
    const thief = await agentOf("other");
    for (let attempt = 0; attempt < 3; attempt++) {
      expect(await thief.start({ ...pooled("pool-hostile"), name: `thief${attempt}` })).toMatchObject({
        type: "tunnel_failed",
        code: "subdomain_in_use",
        message: "subdomain 'pool-hostile' is in use by another online tunnel",
      });
    }
    expect(await servedBy(tunnel.public_url!, 10)).toEqual(Array(10).fill("owner"));
    await expect(thief.next("request_head", () => true, 200)).rejects.toThrow("no request_head frame");
  });

  it(`a pool takes ${MAX_POOL_MEMBERS} members; the next is refused with the bound`, async () => {
    const agent = await agentOf();
    for (let i = 0; i < MAX_POOL_MEMBERS; i++) await agent.startOk({ ...pooled("pool-full"), name: `m${i}` });
    expect(await agent.start({ ...pooled("pool-full"), name: "one-too-many" })).toMatchObject({
      type: "tunnel_failed",
      code: "subdomain_in_use",
      message: `subdomain 'pool-full' already has ${MAX_POOL_MEMBERS} tunnels in its pool, the most a pool takes`,
    });
  });

  it("a labeled tunnel cannot ask for pooling: it has no public host", async () => {
    const agent = await agentOf();
    expect(await agent.start({ proto: undefined, labels: { app: "x" }, pooling_enabled: true })).toMatchObject({
      type: "tunnel_failed",
      code: "invalid_definition",
      message: "a labeled tunnel has no public host, so no pool to join",
    });
  });
});

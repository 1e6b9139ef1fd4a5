/**
 * `/tunnel_sessions` through the whole Worker: agents connect to the real agent endpoint (TunnelSession and
 * TunnelRegistry objects), say hello, and the management API lists what the registry recorded.
 */

import { env, SELF } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { credentialIdOf } from "../../../src/management/auth.ts";
import { AGENT_SESSION_PATH, type FrameOf } from "../../../src/relay/index.ts";
import { addTunnelSession, listTunnelSessions, tunnelSessionRecord } from "../../../src/tunnels/registry-client.ts";
import { FakeAgent } from "../tunnels/fake-agent.ts";
import { ORIGIN, RFC3339_UTC, callError, callJson } from "./helpers.ts";
import { TEST_KEYS, type TestKeyName } from "./keys.ts";

interface TunnelSession {
  id: string;
  uri: string;
  agent_version: string;
  credential: { id: string; uri: string };
  ip: string;
  metadata: string;
  os: string;
  region: string;
  started_at: string;
  transport: string;
}

interface TunnelSessionList {
  tunnel_sessions: TunnelSession[];
  uri: string;
  next_page_uri: string | null;
}

const SETTLES = { timeout: 5_000, interval: 50 };
const agents: FakeAgent[] = [];

afterEach(() => {
  for (const agent of agents.splice(0)) if (!agent.closed) agent.close();
});

/** Connects an agent from `ip` with `key` and says hello with `hello`; answers the agent and its session id. */
async function connect(key: TestKeyName, ip: string, hello: Omit<FrameOf<"hello">, "type">): Promise<{ agent: FakeAgent; sessionId: string }> {
  const response = await SELF.fetch(`http://127.0.0.1:8787${AGENT_SESSION_PATH}`, {
    headers: { upgrade: "websocket", authorization: `Bearer ${TEST_KEYS[key].key}`, "cf-connecting-ip": ip },
  });
  if (response.status !== 101 || !response.webSocket) throw new Error(`agent endpoint answered ${response.status}: ${await response.text()}`);
  response.webSocket.accept();
  const agent = new FakeAgent(response.webSocket);
  agents.push(agent);
  agent.send({ type: "hello", ...hello });
  return { agent, sessionId: (await agent.next("welcome")).session_id };
}

async function credentialIdOfKey(key: TestKeyName): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(TEST_KEYS[key].key)));
  return credentialIdOf(digest);
}

async function sessionIds(key: TestKeyName = "dev"): Promise<string[]> {
  return (await callJson<TunnelSessionList>("GET", "/tunnel_sessions", 200, { key })).tunnel_sessions.map((session) => session.id);
}

describe("tunnel sessions", () => {
  it("an agent that said hello is listed and read in the reference API's shape; it is gone once it disconnects", async () => {
    const startedFrom = Math.floor(Date.now() / 1000) * 1000;
    const { agent, sessionId } = await connect("dev", "203.0.113.7", { agent_version: "3.1.4", os: "linux/x64", metadata: '{"team":"edge"}' });
    await vi.waitFor(async () => expect(await sessionIds()).toContain(sessionId), SETTLES);

    const session = await callJson<TunnelSession>("GET", `/tunnel_sessions/${sessionId}`, 200);
    const credentialId = await credentialIdOfKey("dev");
    expect(session).toEqual({
      id: sessionId,
      uri: `${ORIGIN}/tunnel_sessions/${sessionId}`,
      agent_version: "3.1.4",
      credential: { id: credentialId, uri: `${ORIGIN}/credentials/${credentialId}` },
      ip: "203.0.113.7",
      metadata: '{"team":"edge"}',
      os: "linux/x64",
      region: "local",
      started_at: expect.stringMatching(RFC3339_UTC),
      transport: "tollgate/v1",
    });
    expect(Date.parse(session.started_at)).toBeGreaterThanOrEqual(startedFrom - 1000);
    expect(Date.parse(session.started_at)).toBeLessThanOrEqual(Date.now());
    const list = await callJson<TunnelSessionList>("GET", "/tunnel_sessions", 200);
    expect(list.tunnel_sessions.find((listed) => listed.id === sessionId)).toEqual(session);
    expect(list.uri).toBe(`${ORIGIN}/tunnel_sessions`);

    agent.close();
    await vi.waitFor(async () => expect(await sessionIds()).not.toContain(sessionId), SETTLES);
    await callError("GET", `/tunnel_sessions/${sessionId}`, 404, 204, {}, `No online tunnel session '${sessionId}'`);
  });

  it('metadata and os are "" when the agent did not send them; another key of the account has another credential id', async () => {
    const { sessionId } = await connect("devSecond", "203.0.113.8", { agent_version: "0.0.1" });
    await vi.waitFor(async () => expect(await sessionIds()).toContain(sessionId), SETTLES);
    const session = await callJson<TunnelSession>("GET", `/tunnel_sessions/${sessionId}`, 200);
    expect(session).toMatchObject({ metadata: "", os: "", agent_version: "0.0.1" });
    expect(session.credential.id).toBe(await credentialIdOfKey("devSecond"));
    expect(session.credential.id).not.toBe(await credentialIdOfKey("dev"));
  });

  it('a client address that does not read as an IP address is recorded as ""', async () => {
    const { sessionId } = await connect("dev", `not-an-ip-${"x".repeat(60)}`, { agent_version: "1" });
    await vi.waitFor(async () => expect(await sessionIds()).toContain(sessionId), SETTLES);
    expect((await callJson<TunnelSession>("GET", `/tunnel_sessions/${sessionId}`, 200)).ip).toBe("");
  });

  it("an account never sees another account's sessions, in the list or by id", async () => {
    const { sessionId } = await connect("other", "203.0.113.9", { agent_version: "1" });
    await vi.waitFor(async () => expect(await sessionIds("other")).toContain(sessionId), SETTLES);
    expect(await sessionIds("dev")).not.toContain(sessionId);
    await callError("GET", `/tunnel_sessions/${sessionId}`, 404, 204, { key: "dev" });
    await callJson("GET", `/tunnel_sessions/${sessionId}`, 200, { key: "other" });
  });

  it("the registry pages by keyset: newest first, before an id, at most limit, saying whether more are older", async () => {
    const accountId = "acct_paging_sessions";
    const ids = Array.from({ length: 5 }, (_, i) => `ts_${String(i + 1).padStart(27, "0")}`);
    for (const id of ids) {
      const record = tunnelSessionRecord({ sessionId: id, region: "local", clientIp: "198.51.100.1", credentialId: "cr_x" }, Date.now(), {
        agent_version: "1",
      });
      await addTunnelSession(env, accountId, record, 60_000);
    }
    const page = await listTunnelSessions(env, accountId, ids[3], 2);
    expect(page.items.map((item) => item.id)).toEqual([ids[2], ids[1]]);
    expect(page.hasMore).toBe(true);
    expect(await listTunnelSessions(env, accountId, undefined, 10)).toEqual({ items: expect.any(Array), hasMore: false });
    expect((await listTunnelSessions(env, accountId, undefined, 10)).items.map((item) => item.id)).toEqual([...ids].reverse());
    expect((await listTunnelSessions(env, accountId, ids[1], 10)).items.map((item) => item.id)).toEqual([ids[0]]);
  });

  it("limit out of 1 … 100 → 400 ERR_SVC_233; a before_id that is not a session id → 400 ERR_SVC_215", async () => {
    await callError("GET", "/tunnel_sessions?limit=0", 400, 233);
    await callError("GET", "/tunnel_sessions?limit=101", 400, 233);
    const wrong = await callError("GET", "/tunnel_sessions?before_id=tn_0ERbD4CoWXJxTYICGPe8UcyAzR6", 400, 215, {}, "'ts_…'");
    expect(wrong.details.field).toBe("before_id");
  });

  it("next_page_uri walks every session once", async () => {
    const connected = [];
    for (let i = 0; i < 3; i++) connected.push(await connect("other", `203.0.113.${20 + i}`, { agent_version: `v${i}` }));
    const expected = connected.map((c) => c.sessionId);
    await vi.waitFor(async () => expect(await sessionIds("other")).toEqual(expect.arrayContaining(expected)), SETTLES);
    const seen: string[] = [];
    let next: string | null = "/tunnel_sessions?limit=1";
    while (next) {
      const page: TunnelSessionList = await callJson<TunnelSessionList>("GET", next, 200, { key: "other" });
      expect(page.tunnel_sessions.length).toBeLessThanOrEqual(1);
      seen.push(...page.tunnel_sessions.map((session) => session.id));
      next = page.next_page_uri;
    }
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual([...seen].sort().reverse());
    expect(seen).toEqual(expect.arrayContaining(expected));
  });
});

import { describe, expect, it, vi } from "vitest";
import type { TunnelRecord } from "../../../src/tunnels/registry-client.ts";
import { ORIGIN, callError, callJson } from "./helpers.ts";

/** Online tunnels by account, standing in for the registry the tunnels fill. */
const online = vi.hoisted(() => new Map<string, TunnelRecord[]>());

vi.mock("../../../src/tunnels/registry-client.ts", () => ({
  listOnlineTunnels: async (_env: unknown, accountId: string) => [...(online.get(accountId) ?? [])],
  getOnlineTunnel: async (_env: unknown, accountId: string, id: string) => online.get(accountId)?.find((tunnel) => tunnel.id === id),
}));

interface TunnelList {
  tunnels: Array<Record<string, unknown> & { id: string }>;
  uri: string;
  next_page_uri: string | null;
}

function tunnelId(n: number): string {
  return `tn_${String(n).padStart(27, "0")}`;
}

function record(n: number, extra: Partial<TunnelRecord> = {}): TunnelRecord {
  return {
    id: tunnelId(n),
    public_url: `https://t${n}.tollgate.test`,
    started_at: "2026-05-01T12:00:00Z",
    proto: "https",
    region: "local",
    tunnel_session: { id: `ts_${String(n).padStart(27, "0")}` },
    endpoint: { id: `ep_${String(n).padStart(27, "0")}` },
    forwards_to: `http://localhost:${3000 + n}`,
    ...extra,
  };
}

describe("tunnels", () => {
  it("with none online, GET /tunnels → 200 with an empty list and next_page_uri null", async () => {
    online.clear();
    expect(await callJson<TunnelList>("GET", "/tunnels", 200)).toEqual({ tunnels: [], uri: `${ORIGIN}/tunnels`, next_page_uri: null });
  });

  it("lists the account's online tunnels newest first, with absolute uris on their references", async () => {
    online.set("acct_dev", [record(1), record(3, { metadata: "ci", labels: { team: "edge" } }), record(2)]);
    const list = await callJson<TunnelList>("GET", "/tunnels", 200);
    expect(list.tunnels.map((tunnel) => tunnel.id)).toEqual([tunnelId(3), tunnelId(2), tunnelId(1)]);
    expect(list.tunnels[0]).toEqual({
      id: tunnelId(3),
      public_url: "https://t3.tollgate.test",
      started_at: "2026-05-01T12:00:00Z",
      metadata: "ci",
      proto: "https",
      region: "local",
      tunnel_session: { id: `ts_${"0".repeat(26)}3`, uri: `${ORIGIN}/tunnel_sessions/ts_${"0".repeat(26)}3` },
      endpoint: { id: `ep_${"0".repeat(26)}3`, uri: `${ORIGIN}/endpoints/ep_${"0".repeat(26)}3` },
      labels: { team: "edge" },
      forwards_to: "http://localhost:3003",
    });
    // metadata is always there ("" when none was configured); other fields that do not apply are omitted, not null.
    expect(list.tunnels[1].metadata).toBe("");
    expect(Object.keys(list.tunnels[1])).not.toContain("labels");
    expect(Object.keys(list.tunnels[1])).not.toContain("backends");
  });

  it("backend tunnels show their backends as references", async () => {
    online.set("acct_dev", [record(9, { public_url: undefined, endpoint: undefined, proto: undefined, backends: [{ id: "bkdtg_1" }] })]);
    const [tunnel] = (await callJson<TunnelList>("GET", "/tunnels", 200)).tunnels;
    expect(tunnel.backends).toEqual([{ id: "bkdtg_1", uri: `${ORIGIN}/backends/tunnel_group/bkdtg_1` }]);
    expect(Object.keys(tunnel)).not.toContain("public_url");
    expect(Object.keys(tunnel)).not.toContain("endpoint");
  });

  it("pages with limit and before_id/beforeId like every list", async () => {
    online.set(
      "acct_dev",
      [1, 2, 3, 4, 5].map((n) => record(n)),
    );
    const first = await callJson<TunnelList>("GET", "/tunnels?limit=2", 200);
    expect(first.tunnels.map((tunnel) => tunnel.id)).toEqual([tunnelId(5), tunnelId(4)]);
    expect(first.next_page_uri).toBe(`${ORIGIN}/tunnels?before_id=${tunnelId(4)}&limit=2`);
    // The tunnel at the cursor goes offline between pages: the next page is unaffected.
    online.set(
      "acct_dev",
      [1, 2, 3, 5].map((n) => record(n)),
    );
    const second = await callJson<TunnelList>("GET", first.next_page_uri!, 200);
    expect(second.tunnels.map((tunnel) => tunnel.id)).toEqual([tunnelId(3), tunnelId(2)]);
    const last = await callJson<TunnelList>("GET", `/tunnels?beforeId=${tunnelId(2)}&limit=2`, 200);
    expect(last).toEqual({ tunnels: [expect.objectContaining({ id: tunnelId(1) })], uri: `${ORIGIN}/tunnels`, next_page_uri: null });
  });

  it("limit out of 1 … 100 → 400 ERR_SVC_233; a before_id that is not a tunnel id → 400 ERR_SVC_215", async () => {
    await callError("GET", "/tunnels?limit=0", 400, 233);
    await callError("GET", "/tunnels?limit=101", 400, 233);
    await callError("GET", "/tunnels?before_id=bot_0ERbD4CoWXJxTYICGPe8UcyAzR6", 400, 215);
  });

  it("GET /tunnels/{id} → 200 the tunnel; unknown → 404", async () => {
    online.set("acct_dev", [record(1), record(2)]);
    expect(await callJson("GET", `/tunnels/${tunnelId(2)}`, 200)).toMatchObject({ id: tunnelId(2), forwards_to: "http://localhost:3002" });
    const envelope = await callError("GET", `/tunnels/${tunnelId(7)}`, 404, 204, {}, tunnelId(7));
    expect(envelope.details.id).toBe(tunnelId(7));
  });

  it("an account sees only its own tunnels", async () => {
    online.set("acct_dev", [record(1)]);
    online.set("acct_other", [record(2)]);
    expect((await callJson<TunnelList>("GET", "/tunnels", 200, { key: "other" })).tunnels.map((tunnel) => tunnel.id)).toEqual([tunnelId(2)]);
    await callError("GET", `/tunnels/${tunnelId(1)}`, 404, 204, { key: "other" });
  });
});

/**
 * The tunnels of one agent session: starting one (validate, claim its host within the account's quota,
 * list it in the registry), stopping one, and taking them all offline when the session ends. The session
 * object hands frames here and sends back what this answers; nothing here touches WebSockets.
 */

import type { Env } from "../env.ts";
import { newId } from "../ids.ts";
import { rfc3339 } from "../time.ts";
import { backendId } from "./backend-id.ts";
import { HOST_GRACE_MS, MAX_HOSTS_PER_ACCOUNT, type HostClaim } from "./host-claims.ts";
import { isReservedLabel, publicUrl, randomLabel } from "./hostnames.ts";
import { TunnelFailure, type Frame, type FrameOf } from "../relay/index.ts";
import {
  addOnlineTunnel,
  addTunnelSession,
  forgetHost,
  holdHost,
  removeOnlineTunnels,
  removeTunnelSession,
  renewOnlineTunnels,
  tunnelSessionRecord,
  type HoldResult,
  type TunnelRecord,
} from "./registry-client.ts";
import { LEASE_HEARTBEATS } from "./session-liveness.ts";
import type { SessionMeta, SessionStore, SessionTunnel } from "./session-store.ts";
import { validateTunnelStart } from "./tunnel-spec.ts";

const RANDOM_LABEL_ATTEMPTS = 4;

export interface SessionTunnelsOptions {
  readonly env: Env;
  readonly store: SessionStore;
  send(frame: Frame): void;
  /** True while the agent's connection is open. */
  connected(): boolean;
  /** Fails the streams and closes the public sockets of a tunnel that went offline. */
  disconnectTraffic(tunnelId: string): void;
}

type ClaimOutcome = { ok: true; label: string; random: boolean } | { ok: false; code: string; message: string };

export class SessionTunnels {
  constructor(private readonly options: SessionTunnelsOptions) {}

  /** Lists the session in the account's registry (management's `/tunnel_sessions`) once the agent said who it is. */
  async recordSession(meta: SessionMeta, hello: FrameOf<"hello">): Promise<void> {
    const { env } = this.options;
    await addTunnelSession(env, meta.accountId, tunnelSessionRecord(meta, meta.connectedAt, hello), leaseMs(meta));
    // the session ended while it was being recorded: endSession ran before the record existed
    if (!this.options.connected()) await removeTunnelSession(env, meta.accountId, meta.sessionId);
  }

  /**
   * Keeps the session and its tunnels listed for another lease, and re-asserts each tunnel's host: a claim
   * that could not reach this session may have marked it offline. A tunnel whose host another tunnel holds
   * now is stopped, and the agent told why.
   */
  async renew(meta: SessionMeta): Promise<void> {
    const { env, store } = this.options;
    const labelled = store.tunnels().filter((tunnel) => tunnel.label);
    const [, ...held] = await Promise.allSettled([
      renewOnlineTunnels(env, meta.accountId, meta.sessionId, leaseMs(meta)),
      ...labelled.map((tunnel) => hostObject(env, tunnel.label!).reassert(tunnel.id)),
    ]);
    for (const [index, state] of held.entries()) {
      if (state.status !== "fulfilled" || state.value) continue;
      const tunnel = labelled[index];
      if (!store.tunnel(tunnel.id)) continue; // stopped meanwhile
      await this.drop(meta, tunnel);
      this.options.send({ type: "tunnel_stopped", tunnel_id: tunnel.id, reason: `its host name '${tunnel.label}' is served by another tunnel now` });
    }
  }

  async start(frame: FrameOf<"start_tunnel">): Promise<void> {
    const { store, env } = this.options;
    const meta = store.meta();
    const failed = (code: string, message: string) => this.options.send({ type: "tunnel_failed", request_id: frame.request_id, code, message });
    if (!meta) return failed(TunnelFailure.internal, "the session is not set up; reconnect");
    const checked = validateTunnelStart(frame);
    if (!checked.ok) return failed(checked.code, checked.message);
    const spec = checked.spec;

    const id = newId("tn");
    const startedAt = rfc3339();
    const base = { id, started_at: startedAt, region: meta.region, tunnel_session: { id: meta.sessionId }, forwards_to: spec.forwardsTo };
    // Known to the session before its host is claimed, so a public request racing the start finds it.
    store.saveTunnel({ id, name: spec.name });
    let record: TunnelRecord;
    let label: string | undefined;
    let random = false;
    if (spec.kind === "endpoint") {
      const claim: HostClaim = {
        accountId: meta.accountId,
        sessionId: meta.sessionId,
        tunnelId: id,
        trafficPolicy: spec.trafficPolicy,
        random: !spec.subdomain,
        ...(spec.poolingEnabled ? { pooled: true } : {}),
      };
      const claimed = await this.claimHost(meta, claim, spec.subdomain);
      if (!claimed.ok) {
        store.deleteTunnel(id);
        return failed(claimed.code, claimed.message);
      }
      label = claimed.label;
      random = claimed.random;
      record = {
        ...base,
        public_url: publicUrl(label, meta.domain, meta.publicBase),
        proto: meta.publicBase.scheme,
        endpoint: { id: newId("ep") },
        ...(spec.poolingEnabled ? { pooling_enabled: true } : {}),
        ...(spec.metadata !== undefined ? { metadata: spec.metadata } : {}),
      };
    } else {
      record = {
        ...base,
        labels: { ...spec.labels },
        backends: [{ id: await backendId(meta.accountId, spec.labels ?? {}) }],
        ...(spec.metadata !== undefined ? { metadata: spec.metadata } : {}),
      };
    }
    const tunnel: SessionTunnel = { id, name: spec.name, label, ...(random ? { random } : {}) };
    store.saveTunnel(tunnel);
    await addOnlineTunnel(env, meta.accountId, meta.sessionId, record, leaseMs(meta), label);
    if (!this.options.connected()) {
      // the session ended while the tunnel was being set up: undo what endSession could not see
      await this.drop(meta, tunnel);
      return;
    }
    this.options.send({
      type: "tunnel_started",
      request_id: frame.request_id,
      tunnel: { id, name: spec.name, public_url: record.public_url, proto: record.proto, subdomain: label, started_at: startedAt },
    });
  }

  async stop(frame: FrameOf<"stop_tunnel">): Promise<void> {
    const meta = this.options.store.meta();
    const tunnel = this.options.store.tunnel(frame.tunnel_id);
    if (meta && tunnel) await this.drop(meta, tunnel);
    this.options.send({
      type: "tunnel_stopped",
      request_id: frame.request_id,
      tunnel_id: frame.tunnel_id,
      reason: tunnel ? "stopped by the agent" : "not running",
    });
  }

  /**
   * Takes every tunnel of the session offline and forgets the session (its registry record too). Its hosts
   * stay reserved for the account for the grace period, but only chosen subdomains keep counting against its
   * quota: a random label is unguessable, so nobody else could take it anyway.
   */
  async endSession(): Promise<void> {
    const { store, env } = this.options;
    const meta = store.meta();
    const tunnels = store.tunnels();
    store.forgetSession();
    if (!meta) return;
    const labelled = tunnels.filter((tunnel) => tunnel.label);
    const chosen = labelled.filter((tunnel) => !tunnel.random).map((tunnel) => tunnel.id);
    await Promise.allSettled([
      ...labelled.map((tunnel) => hostObject(env, tunnel.label!).release(tunnel.id)),
      removeOnlineTunnels(env, meta.accountId, meta.sessionId, undefined, chosen, HOST_GRACE_MS),
    ]);
  }

  /**
   * Claims the wanted subdomain, or a random free label, within the account's quota of held host names.
   * Reserved names are never handed out; a name another account used lately is kept for it (host-claims.ts).
   */
  private async claimHost(meta: SessionMeta, claim: HostClaim, subdomain: string | undefined): Promise<ClaimOutcome> {
    const { env } = this.options;
    if (subdomain && isReservedLabel(subdomain)) {
      return {
        ok: false,
        code: TunnelFailure.subdomainReserved,
        message: `subdomain '${subdomain}' is reserved: names such as www, api, admin and login are never handed out`,
      };
    }
    const candidates = subdomain ? [subdomain] : Array.from({ length: RANDOM_LABEL_ATTEMPTS }, () => randomLabel());
    let refusal = "";
    for (const label of candidates) {
      const hold = { label, tunnelId: claim.tunnelId, sessionId: meta.sessionId };
      const held = await holdHost(env, meta.accountId, hold, MAX_HOSTS_PER_ACCOUNT, leaseMs(meta));
      if (!held.ok) return { ok: false, code: TunnelFailure.hostQuotaExceeded, message: quotaMessage(held, Date.now()) };
      const result = await hostObject(env, label).claim(claim);
      if (result.ok) return { ok: true, label, random: result.random };
      await forgetHost(env, meta.accountId, label, claim.tunnelId);
      refusal = result.reason;
    }
    return {
      ok: false,
      code: TunnelFailure.subdomainInUse,
      message: subdomain ? `subdomain '${subdomain}' ${refusal}` : "could not find a free host name; try again",
    };
  }

  /** Takes one tunnel offline on purpose: its host label is free at once, for anyone. */
  private async drop(meta: SessionMeta, tunnel: SessionTunnel): Promise<void> {
    const { store, env } = this.options;
    store.deleteTunnel(tunnel.id);
    this.options.disconnectTraffic(tunnel.id);
    await Promise.allSettled([
      tunnel.label ? hostObject(env, tunnel.label).release(tunnel.id, true) : Promise.resolve(),
      removeOnlineTunnels(env, meta.accountId, meta.sessionId, [tunnel.id]),
    ]);
  }
}

/** Why a host hold was refused, and when the quota frees up (if waiting helps). */
function quotaMessage(held: Exclude<HoldResult, { ok: true }>, now: number): string {
  const online = held.held - held.offline;
  const head = `the account already holds ${held.held} host names, the most it may (${online} of online tunnels, ${held.offline} kept after their tunnels went offline)`;
  if (held.freesAt === undefined) return `${head}; stop one of its tunnels first`;
  const seconds = Math.max(1, Math.ceil((held.freesAt - now) / 1000));
  return `${head}; the next one frees up at ${new Date(held.freesAt).toISOString()} (in ${seconds} s), or stop one of its tunnels`;
}

function leaseMs(meta: SessionMeta): number {
  return meta.heartbeatMs * LEASE_HEARTBEATS;
}

function hostObject(env: Env, label: string) {
  return env.TUNNEL_HOST.get(env.TUNNEL_HOST.idFromName(label));
}

/**
 * The agent's tunnels by name: what the user asked for (config file, command line, agent API) and what the
 * edge gave (ids, public URL). After a reconnect every tunnel is opened again, asking for its previous
 * host name so its public URL stays the same.
 */

import { addrDisplay, parseAddr } from "../settings/addr.ts";
import type { TunnelDefinition } from "../settings/schema.ts";
import { EdgeRefusal, type EdgeSession } from "../edge/edge-session.ts";
import type { ExchangeTap } from "../edge/exchange.ts";
import type { LocalTunnel } from "../edge/local-forwarder.ts";
import { TunnelMetrics } from "../metrics/tunnel-metrics.ts";
import { TunnelFailure } from "../../relay/protocol.ts";

/** Failures that say nothing about the tunnel itself, only that the session was not there to answer. */
const TRANSIENT = new Set(["offline", "disconnected", "timeout"]);

export type TunnelState = "starting" | "online" | "offline" | "failed" | "stopped";

export class Tunnel implements LocalTunnel {
  id = "";
  publicUrl: string | undefined;
  /** Public protocol as the edge reports it (`http`/`https`); the definition's proto for labeled or unstarted tunnels. */
  proto: string;
  /** The host label the edge gave, asked for again after a reconnect. */
  subdomain: string | undefined;
  state: TunnelState = "starting";
  error: string | undefined;
  startedAt: Date | undefined;
  readonly metrics = new TunnelMetrics();
  readonly url: URL;

  constructor(
    readonly name: string,
    readonly definition: TunnelDefinition,
    private readonly extraTaps: () => readonly ExchangeTap[],
  ) {
    const parsed = parseAddr(definition.addr);
    if (!parsed.ok) throw new Error(`addr: ${parsed.message}`);
    this.url = parsed.url;
    this.proto = definition.labels ? "" : (definition.proto ?? "http");
  }

  get inspect(): boolean {
    return this.definition.inspect;
  }

  get taps(): readonly ExchangeTap[] {
    return [this.metrics.tap, ...this.extraTaps()];
  }

  /** `config.addr` of the agent API and `forwards_to` at the edge. */
  get addr(): string {
    return addrDisplay(this.url);
  }
}

export class DuplicateTunnelError extends Error {
  constructor(readonly tunnelName: string) {
    super(`a tunnel named '${tunnelName}' is already running`);
    this.name = "DuplicateTunnelError";
  }
}

export interface TunnelManagerOptions {
  readonly session: EdgeSession;
  /** Agent-wide metadata, sent with tunnels that have none of their own. */
  readonly metadata?: string;
}

export class TunnelManager {
  private readonly tunnels = new Map<string, Tunnel>();
  private readonly byId = new Map<string, Tunnel>();
  private readonly taps: ExchangeTap[] = [];
  private readonly listeners = new Set<(tunnel: Tunnel) => void>();

  constructor(private readonly options: TunnelManagerOptions) {
    options.session.onOnline(() => void this.reopenAll());
  }

  /** Adds a tap (request capture) that sees every exchange of every tunnel. */
  addTap(tap: ExchangeTap): void {
    this.taps.push(tap);
  }

  onChange(listener: (tunnel: Tunnel) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  list(): Tunnel[] {
    return [...this.tunnels.values()];
  }

  get(name: string): Tunnel | undefined {
    return this.tunnels.get(name);
  }

  /** The tunnel the edge knows by `tunnelId` (for relayed streams). */
  lookup(tunnelId: string): Tunnel | undefined {
    return this.byId.get(tunnelId);
  }

  /**
   * Adds a tunnel and opens it at the edge. With `whenOnline`, a tunnel added while the session is not
   * online waits for it (config tunnels at start-up); otherwise it fails at once with EdgeRefusal("offline").
   */
  async start(name: string, definition: TunnelDefinition, { whenOnline = false }: { whenOnline?: boolean } = {}): Promise<Tunnel> {
    if (this.tunnels.has(name)) throw new DuplicateTunnelError(name);
    const tunnel = new Tunnel(name, definition, () => this.taps);
    if (!whenOnline && this.options.session.status.state !== "online") {
      tunnel.metrics.close();
      throw new EdgeRefusal(
        "offline",
        `not connected to the edge (${this.options.session.status.state}): ${this.options.session.status.lastError ?? "connecting"}`,
      );
    }
    this.tunnels.set(name, tunnel);
    this.changed(tunnel);
    if (this.options.session.status.state !== "online") return tunnel;
    try {
      await this.open(tunnel);
    } catch (error) {
      if (whenOnline && error instanceof EdgeRefusal && TRANSIENT.has(error.code)) {
        // the session dropped meanwhile: the tunnel opens when it is back
        tunnel.state = "offline";
        tunnel.error = error.message;
        this.changed(tunnel);
        return tunnel;
      }
      this.forget(tunnel);
      throw error;
    }
    return tunnel;
  }

  /** Stops a tunnel: false when there is none of that name. */
  async stop(name: string): Promise<boolean> {
    const tunnel = this.tunnels.get(name);
    if (!tunnel) return false;
    this.forget(tunnel);
    if (tunnel.id && this.options.session.status.state === "online") {
      await this.options.session.stopTunnel(tunnel.id).catch(() => undefined);
    }
    tunnel.state = "stopped";
    this.changed(tunnel);
    return true;
  }

  async stopAll(): Promise<void> {
    await Promise.all(this.list().map((tunnel) => this.stop(tunnel.name)));
  }

  /** The session dropped: tunnels are offline until it is back. */
  disconnected(reason: string): void {
    this.byId.clear();
    for (const tunnel of this.tunnels.values()) {
      tunnel.state = "offline";
      tunnel.error = reason;
      this.changed(tunnel);
    }
  }

  /** The edge took a tunnel offline on its own. */
  stoppedByEdge(tunnelId: string, reason: string): void {
    const tunnel = this.byId.get(tunnelId);
    if (!tunnel) return;
    this.byId.delete(tunnelId);
    tunnel.state = "failed";
    tunnel.error = `stopped by the edge: ${reason}`;
    this.changed(tunnel);
  }

  /** Resolves when the tunnel is online, or failed (the edge refused it). */
  settled(tunnel: Tunnel): Promise<Tunnel> {
    return new Promise((resolve) => {
      const check = () => tunnel.state === "online" || tunnel.state === "failed" || tunnel.state === "stopped";
      if (check()) return resolve(tunnel);
      const off = this.onChange((changed) => {
        if (changed === tunnel && check()) {
          off();
          resolve(tunnel);
        }
      });
    });
  }

  private async reopenAll(): Promise<void> {
    await Promise.all(
      this.list().map((tunnel) =>
        this.open(tunnel).catch((error: Error) => {
          // a refusal is final; a session that dropped meanwhile reopens the tunnel when it is back
          tunnel.state = error instanceof EdgeRefusal && TRANSIENT.has(error.code) ? "offline" : "failed";
          tunnel.error = error.message;
          this.changed(tunnel);
        }),
      ),
    );
  }

  private async open(tunnel: Tunnel): Promise<void> {
    tunnel.state = "starting";
    this.changed(tunnel);
    const definition = tunnel.definition;
    const request = {
      name: tunnel.name,
      proto: definition.labels ? undefined : (definition.proto ?? "http"),
      labels: definition.labels,
      forwards_to: tunnel.addr,
      metadata: definition.metadata ?? this.options.metadata,
      traffic_policy: definition.traffic_policy,
      subdomain: definition.subdomain ?? tunnel.subdomain,
      // only when asked: an older edge strips it anyway, and a frame without it reads as before
      ...(definition.pooling_enabled ? { pooling_enabled: true } : {}),
    };
    let started: Awaited<ReturnType<typeof this.options.session.startTunnel>>;
    try {
      started = await this.options.session.startTunnel(request);
    } catch (error) {
      // The previous host name is only a wish: if someone else holds it now, take a new one.
      if (!(error instanceof EdgeRefusal && error.code === TunnelFailure.subdomainInUse && !definition.subdomain && tunnel.subdomain)) throw error;
      started = await this.options.session.startTunnel({ ...request, subdomain: undefined });
    }
    if (!this.tunnels.has(tunnel.name) || this.tunnels.get(tunnel.name) !== tunnel) {
      // stopped while starting
      await this.options.session.stopTunnel(started.id).catch(() => undefined);
      return;
    }
    if (tunnel.id) this.byId.delete(tunnel.id);
    tunnel.id = started.id;
    tunnel.publicUrl = started.public_url;
    tunnel.proto = started.proto ?? tunnel.proto;
    tunnel.subdomain = started.subdomain;
    tunnel.startedAt = new Date(started.started_at);
    tunnel.state = "online";
    tunnel.error = undefined;
    this.byId.set(started.id, tunnel);
    this.changed(tunnel);
  }

  private forget(tunnel: Tunnel): void {
    if (this.tunnels.get(tunnel.name) === tunnel) this.tunnels.delete(tunnel.name);
    if (tunnel.id) this.byId.delete(tunnel.id);
    tunnel.metrics.close();
  }

  private changed(tunnel: Tunnel): void {
    for (const listener of this.listeners) listener(tunnel);
  }
}

/**
 * What a tunnel session keeps in its object's storage, so it outlives hibernation: who the session is
 * (its meta), its tunnels, and the stream-id reservation. Synchronous: the SQLite-backed KV API.
 */

import type { PublicBase } from "./hostnames.ts";
import type { ReservationStore } from "./stream-ids.ts";

/** What the Worker tells a new session about itself. */
export interface SessionInfo {
  readonly sessionId: string;
  readonly accountId: string;
  readonly region: string;
  readonly domain: string;
  readonly publicBase: PublicBase;
  readonly heartbeatMs: number;
  /** The address the agent connected from, for the session record. */
  readonly clientIp: string;
  /** The public id of the API key the agent authenticated with (`cr_…`). */
  readonly credentialId: string;
}

export interface SessionMeta extends SessionInfo {
  readonly connectedAt: number;
  /** Largest data frame body the agent takes: what its hello said, MAX_DATA_CHUNK when it said nothing; absent until hello. */
  readonly agentMaxDataChunk?: number;
  /** The edge_decision version the agent's hello named; absent: it takes none (an older agent). */
  readonly agentEdgeDecisions?: number;
  /** The token the agent's body channels carry (body-channel.ts); absent in sessions from before them. */
  readonly bodyToken?: string;
}

export interface SessionTunnel {
  readonly id: string;
  readonly name: string;
  /** Public host label, for endpoint tunnels. */
  readonly label?: string;
  /** The label was chosen by the edge at random, not asked for as a subdomain. */
  readonly random?: boolean;
}

const META_KEY = "meta";
const STREAM_IDS_KEY = "stream-ids";
const TUNNEL_PREFIX = "tunnel:";

export class SessionStore {
  /** Tunnels read so far, by id (undefined: known absent). Every write goes through this class, so it stays true. */
  private readonly tunnelMemo = new Map<string, SessionTunnel | undefined>();

  constructor(private readonly kv: SyncKvStorage) {}

  meta(): SessionMeta | undefined {
    return this.kv.get<SessionMeta>(META_KEY);
  }

  saveMeta(meta: SessionMeta): void {
    this.kv.put(META_KEY, meta);
  }

  /** Read on every relayed request: answered from memory after the first read. */
  tunnel(id: string): SessionTunnel | undefined {
    if (this.tunnelMemo.has(id)) return this.tunnelMemo.get(id);
    const tunnel = this.kv.get<SessionTunnel>(TUNNEL_PREFIX + id);
    // a bounded memo: unknown ids come from the Worker's host lookups, which only name real tunnels, but a
    // stale cache could name many; keep at most a few hundred entries
    if (this.tunnelMemo.size >= 256) this.tunnelMemo.clear();
    this.tunnelMemo.set(id, tunnel);
    return tunnel;
  }

  tunnels(): SessionTunnel[] {
    return [...this.kv.list<SessionTunnel>({ prefix: TUNNEL_PREFIX })].map(([, tunnel]) => tunnel);
  }

  saveTunnel(tunnel: SessionTunnel): void {
    this.kv.put(TUNNEL_PREFIX + tunnel.id, tunnel);
    this.tunnelMemo.set(tunnel.id, tunnel);
  }

  deleteTunnel(id: string): void {
    this.kv.delete(TUNNEL_PREFIX + id);
    this.tunnelMemo.delete(id);
  }

  /** Forgets the session and its tunnels (the stream-id reservation stays: hibernated sockets may still hold ids). */
  forgetSession(): void {
    for (const tunnel of this.tunnels()) this.deleteTunnel(tunnel.id);
    this.kv.delete(META_KEY);
  }

  readonly streamIds: ReservationStore = {
    read: () => this.kv.get<number>(STREAM_IDS_KEY),
    write: (reservedUpTo) => this.kv.put(STREAM_IDS_KEY, reservedUpTo),
  };
}

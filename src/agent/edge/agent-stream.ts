/** One stream of the agent's relay (LocalForwarder): the relay core's stream plus its exchange with the local service. */

import type http from "node:http";
import type { Frame } from "../../relay/frames.ts";
import type { OrderedSink } from "../../relay/framing.ts";
import { SendQueue } from "../../relay/send-queue.ts";
import { RelayStream } from "../../relay/stream-table.ts";
import type { BodyChannelTarget } from "./edge-endpoints.ts";
import type { ExchangeObserver, ExchangeTap } from "./exchange.ts";
import type { LocalSocket } from "./local-websocket.ts";

/** What the forwarder needs to know about a tunnel. */
export interface LocalTunnel {
  readonly id: string;
  readonly name: string;
  readonly url: URL;
  readonly inspect: boolean;
  readonly taps: readonly ExchangeTap[];
}

export interface ForwarderOptions {
  send(frame: Frame): void;
  /** Sends a data frame encoded in place (encodeDataInPlace) as it is; without it, response data goes out as frames through `send`. */
  sendEncoded?(encoded: Uint8Array): void;
  /** Largest data frame body the edge takes (its welcome says; MAX_DATA_CHUNK when it does not). */
  maxDataChunk?(): number;
  /** The edge's body channel for large response bodies (its welcome offers one); without it, all go as frames. */
  bodyChannel?(): BodyChannelTarget | undefined;
  lookup(tunnelId: string): LocalTunnel | undefined;
  /** Prefix of exchange keys (the session id), so keys stay unique across reconnects. */
  sessionKey(): string;
  /** Time to connect to the local address (default 10 s). */
  connectTimeoutMs?: number;
  /** Time for the local service to send its response head (default 60 s). */
  responseTimeoutMs?: number;
  /** Marks the exchanges as replays (the agent sent them, not a public client). */
  replay?: boolean;
  /**
   * Request body bytes the sender may have unacknowledged per stream; a data frame past it resets the
   * stream. Default INITIAL_STREAM_WINDOW, what the protocol gives the edge; a replay hands its whole
   * body over at once from this process, so it is not held to a window.
   */
  receiveWindow?: number;
}

/** Errors of a connection to the local address that mean it could not be reached at all. */
export const UNREACHABLE: ReadonlySet<string> = new Set(["ECONNREFUSED", "ENOTFOUND", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN", "EADDRNOTAVAIL"]);

export class AgentStream extends RelayStream {
  responded = false;
  /** Response body bytes not yet sent (waiting for the end of the turn, or for the edge's window). */
  readonly out: SendQueue;
  /** Where the request body goes, in order; set once the local exchange is opened. */
  sink: OrderedSink = { data: () => undefined, end: () => undefined };
  request?: http.ClientRequest;
  response?: http.IncomingMessage;
  /** For a relayed WebSocket: the agent's socket to the local service. */
  socket?: LocalSocket;
  /** The request method (a HEAD's response never has a body). */
  method = "";
  /** A body channel's POST carrying the response body to the edge. */
  channel?: http.ClientRequest;
  timers: Array<ReturnType<typeof setTimeout>> = [];

  constructor(
    id: number,
    readonly tunnel: LocalTunnel,
    readonly observer: ExchangeObserver,
    readonly startNs: bigint,
    receiveWindow: number,
  ) {
    super(id, { data: (bytes) => this.sink.data(bytes), end: () => this.sink.end() }, { headFirst: false, receiveWindow });
    this.out = new SendQueue(this.core.send, (size) => Buffer.allocUnsafe(size));
  }

  /** Nanoseconds since the exchange began. */
  elapsedNs(): bigint {
    return process.hrtime.bigint() - this.startNs;
  }

  clearTimers(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers = [];
  }
}

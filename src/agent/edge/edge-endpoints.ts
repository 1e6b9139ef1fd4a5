/** Where the agent reaches its edge: the agent endpoint's WebSocket, and the body channel its welcome may offer. */

import WebSocket from "ws";
import type { FrameOf } from "../../relay/frames.ts";
import { AGENT_BODY_PATH, AGENT_SESSION_PATH, PROTOCOL_VERSION } from "../../relay/protocol.ts";

/** ws(s)://host/__tollgate/agent for a server_addr of http(s)://host or ws(s)://host. */
export function agentEndpoint(serverAddr: string): string {
  const url = new URL(serverAddr);
  url.protocol = url.protocol === "https:" || url.protocol === "wss:" ? "wss:" : "ws:";
  url.pathname = AGENT_SESSION_PATH;
  return url.toString();
}

/** http(s)://host/__tollgate/agent/body for a server_addr of http(s)://host or ws(s)://host. */
export function bodyChannelEndpoint(serverAddr: string): string {
  const url = new URL(serverAddr);
  url.protocol = url.protocol === "https:" || url.protocol === "wss:" ? "https:" : "http:";
  url.pathname = AGENT_BODY_PATH;
  url.search = "";
  return url.toString();
}

/** Where and how this session's agent POSTs response bodies (the edge's welcome offered it). */
export interface BodyChannelTarget {
  /** The endpoint with the session object's id: append `&stream=<id>`. */
  readonly url: string;
  readonly token: string;
  /** Largest body the edge takes this way. */
  readonly maxBytes: number;
  /** The agent's User-Agent, as its WebSocket sends it (edges may challenge requests without one). */
  readonly userAgent: string;
}

/** The body channel a welcome offers, as this agent POSTs to it; undefined when it offers none. */
export function channelTarget(welcome: FrameOf<"welcome">, serverAddr: string, userAgent: string): BodyChannelTarget | undefined {
  const offer = welcome.body_channel;
  if (!offer) return undefined;
  return { url: `${bodyChannelEndpoint(serverAddr)}?object=${offer.object}`, token: offer.token, maxBytes: offer.max_bytes, userAgent };
}

/** An edge's refusal of the connection: its HTTP status and what its answer said. */
export interface DialRefusal {
  readonly message: string;
  readonly status: number;
}

/** Opens the agent's WebSocket to the edge; `refusal` says why the edge answered the upgrade with HTTP, once it has. */
export function dialEdge(serverAddr: string, apiKey: string, userAgent: string): { ws: WebSocket; refusal(): DialRefusal | undefined } {
  const ws = new WebSocket(agentEndpoint(serverAddr), {
    headers: {
      authorization: `Bearer ${apiKey}`,
      "tollgate-protocol": String(PROTOCOL_VERSION),
      "user-agent": userAgent,
    },
    handshakeTimeout: 10_000,
    perMessageDeflate: false,
    // An all-zero mask lets ws skip masking every byte it sends (the agent's main cost on large bodies).
    // Masking protects HTTP intermediaries from what untrusted browser scripts send; the agent is not one.
    generateMask: (mask: Buffer) => void mask.fill(0),
  });
  let refusal: DialRefusal | undefined;
  ws.on("unexpected-response", (_request, response) => {
    const chunks: Buffer[] = [];
    response.on("data", (chunk: Buffer) => chunks.push(chunk));
    response.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      let message = `HTTP ${response.statusCode}`;
      try {
        const body = JSON.parse(text) as { msg?: string; error_code?: string };
        if (body.msg) message = `${body.msg}${body.error_code ? ` (${body.error_code})` : ""}`;
      } catch {
        if (text.trim()) message = `HTTP ${response.statusCode}: ${text.trim().slice(0, 200)}`;
      }
      refusal = { message, status: response.statusCode ?? 0 };
      ws.terminate();
    });
  });
  return { ws, refusal: () => refusal };
}

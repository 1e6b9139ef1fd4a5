/** The published `ngrok` npm package's agent-API client, loaded by file path (its exports map hides src/client.js). */

import { createRequire } from "node:module";
import { dirname, join } from "node:path";

export interface NgrokClientError extends Error {
  response: { statusCode: number };
  body: { error_code?: number; status_code?: number; msg?: string; details?: { err?: string } } | string;
}

export interface NgrokClient {
  listTunnels(): Promise<{ tunnels: Array<Record<string, unknown>>; uri: string }>;
  startTunnel(options: Record<string, unknown>): Promise<Record<string, unknown> & { public_url: string; name: string }>;
  tunnelDetail(name: string): Promise<Record<string, unknown>>;
  stopTunnel(name: string): Promise<boolean>;
}

const require = createRequire(import.meta.url);
const { NgrokClient: Client } = require(join(dirname(require.resolve("ngrok")), "src/client.js")) as {
  NgrokClient: new (processUrl: string) => NgrokClient;
};

/** A client for the agent API at `apiUrl` (e.g. http://127.0.0.1:4040). */
export function ngrokClient(apiUrl: string): NgrokClient {
  return new Client(apiUrl);
}

/** The published ngrok client's captured-request calls (`listRequests`, `requestDetail`, `replayRequest`, `deleteAllRequests`), typed. */

import { ngrokClient, type NgrokClient } from "./ngrok-client.ts";

export interface CapturedRequestJson {
  id: string;
  uri: string;
  tunnel_name: string;
  request: { method: string; uri: string; headers: Record<string, string[]>; raw: string };
  response: { status_code: number; raw: string } | null;
  [field: string]: unknown;
}

export interface NgrokRequestClient extends NgrokClient {
  listRequests(options?: { limit?: number; tunnel_name?: string }): Promise<{ uri: string; requests: CapturedRequestJson[] }>;
  requestDetail(id: string): Promise<CapturedRequestJson>;
  /** Sends `{id, tunnelName}` (camelCase, as the package does). */
  replayRequest(id: string, tunnelName?: string): Promise<boolean>;
  deleteAllRequests(): Promise<boolean>;
}

export function ngrokRequestClient(apiUrl: string): NgrokRequestClient {
  return ngrokClient(apiUrl) as NgrokRequestClient;
}

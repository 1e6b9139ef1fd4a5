/**
 * `endpoint.*` (as ngrok's): the route or tunnel the request arrived at. `endpoint.id` is the bucket scope
 * (`route:<edge>/<route>`, `tunnel:<id>`); the address parts come from the URL the client asked for.
 */

import { INT, record, STRING } from "../cel-types.ts";
import type { Exchange } from "../exchange.ts";
import type { VariableFamily } from "./family.ts";

export const ENDPOINT = record("endpoint", { id: STRING, url: STRING, host: STRING, port: INT, protocol: STRING, addr: STRING });

function endpoint(exchange: Exchange): Map<string, unknown> {
  const url = exchange.request.url;
  const protocol = url.protocol.replace(/:$/, "");
  const port = url.port || (protocol === "https" ? "443" : "80");
  return new Map<string, unknown>([
    ["id", exchange.scope],
    ["url", url.origin],
    ["host", url.hostname],
    ["port", BigInt(port)],
    ["protocol", protocol],
    ["addr", `${url.hostname}:${port}`],
  ]);
}

export const endpointVariables: VariableFamily = { types: { endpoint: ENDPOINT }, readers: { endpoint } };

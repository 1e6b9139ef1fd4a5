/** Every CEL variable of a traffic policy: each family's declared types and readers, per phase. */

import type { Type } from "../cel-types.ts";
import type { Exchange, Phase } from "../exchange.ts";
import { actionResultVariables } from "./action-results.ts";
import { connectionVariables } from "./connection.ts";
import { cookieVariables } from "./cookies.ts";
import { endpointVariables } from "./endpoint.ts";
import type { Reader, VariableFamily } from "./family.ts";
import { headerMap } from "./header-map.ts";
import { policyVarsVariables } from "./policy-vars.ts";
import { requestVariable, requestVariables } from "./request.ts";
import { responseVariables } from "./response.ts";
import { timeVariables } from "./time.ts";
import { urlVariables } from "./url.ts";
import { userAgentVariables } from "./user-agent.ts";

const FAMILIES: readonly VariableFamily[] = [
  requestVariables,
  urlVariables,
  userAgentVariables,
  cookieVariables,
  connectionVariables,
  responseVariables,
  actionResultVariables,
  endpointVariables,
  timeVariables,
  policyVarsVariables,
];

function typesOf(phase: Phase): ReadonlyMap<string, Type> {
  const types = new Map<string, Type>();
  for (const family of FAMILIES) {
    if (family.outboundOnly && phase === "inbound") continue;
    for (const [name, type] of Object.entries(family.types)) types.set(name, type);
  }
  return types;
}

/**
 * Variables by name (hidden ones, `@req.url`, included) with their types, but for `actions`: its type is
 * the action registry's (ActionRegistry.actionsType), what the registered actions declare.
 */
export const VARIABLE_TYPES: Readonly<Record<Phase, ReadonlyMap<string, Type>>> = { inbound: typesOf("inbound"), outbound: typesOf("outbound") };

/** The names an expression may write, in the order messages list them. */
export const VISIBLE_VARIABLES: Readonly<Record<Phase, readonly string[]>> = {
  inbound: ["req", "conn", "actions", "endpoint", "time", "vars"],
  outbound: ["req", "conn", "actions", "res", "endpoint", "time", "vars"],
};

/** Every reader by name; `req` and `res` read the header maps, shared by every snapshot of a request. */
export const READERS: Readonly<Record<string, Reader>> = Object.assign({}, ...FAMILIES.map((family) => family.readers), {
  req: (exchange: Exchange) => requestVariable(exchange, headerMap(exchange.request.headers, exchange.budget)),
  res: (exchange: Exchange) =>
    exchange.response &&
    new Map<string, unknown>([
      ["status_code", BigInt(exchange.response.status)],
      ["headers", headerMap(exchange.response.headers, exchange.budget)],
    ]),
});

/**
 * `actions.svc.*`: the result variables of the last execution of each action type. `actions.ngrok.*` is the
 * same, under the name ngrok's documentation uses.
 */

import { BOOL, record, STRING, type Type } from "../cel-types.ts";
import type { Exchange } from "../exchange.ts";
import type { VariableFamily } from "./family.ts";
import { jwtValidationResults, jwtValidationType } from "./jwt-validation-results.ts";
import { urlActionResults, urlActionTypes } from "./url-action-results.ts";
import { circuitBreakerResults, circuitBreakerType } from "./circuit-breaker-results.ts";
import { verifyWebhookResults, verifyWebhookType } from "./verify-webhook-results.ts";

const error = (of: string) => record(`${of}.error`, { code: STRING, message: STRING });

function results(namespace: string): Type {
  const at = `actions.${namespace}`;
  return record(at, {
    rate_limit: record(`${at}.rate_limit`, { bucket_key: STRING, limited: BOOL, error: error(`${at}.rate_limit`) }),
    restrict_ips: record(`${at}.restrict_ips`, { denied: BOOL, action: STRING, matched_cidr: STRING, error: error(`${at}.restrict_ips`) }),
    verify_webhook: verifyWebhookType(at),
    circuit_breaker: circuitBreakerType(at),
    jwt_validation: jwtValidationType(at),
    ...urlActionTypes(at),
  });
}

export const ACTIONS = record("actions", { svc: results("svc"), ngrok: results("ngrok") });

function actionResults(exchange: Exchange): Map<string, unknown> {
  // Read once per snapshot (test/unit/phase-variables.test.ts counts it).
  const {
    rate_limit: rateLimit,
    restrict_ips: restrictIps,
    verify_webhook: verifyWebhook,
    jwt_validation: jwtValidation,
    url_rewrite: urlRewrite,
    redirect,
    basic_auth: basicAuth,
    circuit_breaker: circuitBreaker,
  } = exchange.vars;
  const errorOf = (value: { code: string; message: string }) =>
    new Map([
      ["code", value.code],
      ["message", value.message],
    ]);
  const namespace = new Map<string, unknown>([
    [
      "rate_limit",
      new Map<string, unknown>([
        ["bucket_key", rateLimit.bucket_key],
        ["limited", rateLimit.limited],
        ["error", errorOf(rateLimit.error)],
      ]),
    ],
    [
      "restrict_ips",
      new Map<string, unknown>([
        ["denied", restrictIps.denied],
        ["action", restrictIps.action],
        ["matched_cidr", restrictIps.matched_cidr],
        ["error", errorOf(restrictIps.error)],
      ]),
    ],
    ["verify_webhook", verifyWebhookResults(verifyWebhook)],
    ["circuit_breaker", circuitBreakerResults(circuitBreaker)],
    ["jwt_validation", jwtValidationResults(jwtValidation)],
    ...urlActionResults({ url_rewrite: urlRewrite, redirect, basic_auth: basicAuth }),
  ]);
  return new Map([
    ["svc", namespace],
    ["ngrok", namespace],
  ]);
}

export const actionResultVariables: VariableFamily = { types: { actions: ACTIONS }, readers: { actions: actionResults } };

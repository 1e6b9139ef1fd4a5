/**
 * `jwt-validation` (as ngrok's): the request must carry, where `http.tokens` says, a JWT signed with one of
 * the allowed algorithms by a configured key, from an allowed issuer, for an allowed audience, within its
 * lifetime. Missing: 401 `ERR_SVC_3406`; not valid: 401 `ERR_SVC_3401`; both with `WWW-Authenticate: Bearer`
 * (RFC 6750). No JWKS readable to judge it: 503 `ERR_SVC_7186` (fail closed). Verified, its claims are
 * `actions.svc.jwt_validation.claims` for the expressions, bucket keys and tiers that follow.
 */

import type { JWK } from "jose";
import { z } from "zod";
import { ErrorCode, ServiceError } from "../../errors.ts";
import { BOOL, DYN, list, map, record, STRING } from "../cel-types.ts";
import type { Exchange } from "../exchange.ts";
import { claimsValue } from "../jwt/claims.ts";
import { inlineKeyGetter } from "../jwt/inline-keys.ts";
import { RemoteJwks } from "../jwt/remote-jwks.ts";
import { locateToken } from "../jwt/token-location.ts";
import { busyResponse } from "../request-body.ts";
import { verifyToken, type KeySource, type VerifierSettings } from "../jwt/verify-token.ts";
import { defineAction, isHeaderName } from "./action.ts";
import { inlineJwkSchema, jwksUrlSchema } from "./jwt-validation-keys.ts";
import { declareResults, ERROR_SHAPE, noError, type ResultError } from "./results.ts";

/** Issuers or audiences in an allow list; real ones name one to three. */
export const MAX_JWT_ALLOW_LIST = 16;
/** Tokens one action requires (ngrok: all must be present). */
export const MAX_JWT_TOKENS = 4;
/** JWKS URLs and inline keys of one action. */
export const MAX_JWKS_URLS = 8;
export const MAX_INLINE_KEYS = 16;

/** ngrok's names for JWS algorithms that Tollgate verifies (jose on WebCrypto). */
export const JWT_ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "HS256", "HS384", "HS512", "EdDSA"] as const;

const NO_INTERPOLATION = "must be written out: ${…} is not evaluated in jwt-validation's config";
const plain = (max: number) =>
  z
    .string({ error: "must be a string" })
    .min(1, "must not be empty")
    .max(max, `must be at most ${max} characters`)
    .refine((value) => !value.includes("${"), NO_INTERPOLATION);

const allowList = (what: string) =>
  z.strictObject({
    allow_list: z
      .array(z.strictObject({ value: plain(1024).describe(`An allowed ${what}, compared exactly.`) }), { error: "must be a list of { value } objects" })
      .min(1, "must have at least 1 entry")
      .max(MAX_JWT_ALLOW_LIST, `exceeds the limit of ${MAX_JWT_ALLOW_LIST} entries`),
  });

const tokenSchema = z.strictObject({
  type: z.enum(["id_token", "access_token", "at+jwt", "it+jwt", "plain", "jwt"], {
    error: "must be one of id_token, access_token, at+jwt, it+jwt, plain, jwt",
  }),
  method: z.enum(["header", "body"], { error: "must be header or body" }),
  name: plain(256).describe("The header or body field holding the token (not case sensitive for headers)."),
  prefix: z
    .string({ error: "must be a string" })
    .max(64, "must be at most 64 characters")
    .refine((value) => !value.includes("${"), NO_INTERPOLATION)
    .optional()
    .describe("Stripped before parsing, e.g. 'Bearer '."),
});

const algorithm = z.string({ error: "must be a string" }).superRefine((alg, context) => {
  if ((JWT_ALGORITHMS as readonly string[]).includes(alg)) return;
  const why = alg.toLowerCase() === "none" ? "'none' is never accepted: unsigned tokens prove nothing" : `'${alg}' is not an algorithm`;
  context.addIssue({ code: "custom", message: `${why}; Tollgate verifies ${JWT_ALGORITHMS.join(", ")}` });
});

export const jwtValidationConfig = z
  .strictObject({
    issuer: allowList("issuer (the iss claim)"),
    audience: allowList("audience (one of the aud claim's values)").optional(),
    http: z.strictObject({
      tokens: z
        .array(tokenSchema, { error: "must be a list of tokens" })
        .min(1, "must have at least 1 token")
        .max(MAX_JWT_TOKENS, `exceeds the limit of ${MAX_JWT_TOKENS} tokens`),
    }),
    jws: z.strictObject({
      allowed_algorithms: z.array(algorithm, { error: "must be a list of algorithms" }).min(1, "must have at least 1 algorithm").max(JWT_ALGORITHMS.length),
      keys: z.strictObject({
        // ngrok's hint that tokens carry a kid; Tollgate uses the kid whenever a token has one.
        identification: z
          .array(
            z.strictObject({
              token_claims: z
                .array(z.literal("kid", { error: "must be 'kid'" }))
                .max(1)
                .optional(),
            }),
          )
          .max(1)
          .optional(),
        sources: z
          .strictObject({
            additional_jkus: z.array(jwksUrlSchema).max(MAX_JWKS_URLS, `exceeds the limit of ${MAX_JWKS_URLS} URLs`).optional(),
            inline: z
              .array(inlineJwkSchema)
              .max(MAX_INLINE_KEYS, `exceeds the limit of ${MAX_INLINE_KEYS} keys`)
              .optional()
              .describe("Tollgate: JWKs written here (public keys, or oct secrets for HS*)."),
          })
          .refine(
            (sources) => (sources.additional_jkus?.length ?? 0) + (sources.inline?.length ?? 0) > 0,
            "must give at least one key: additional_jkus or inline",
          ),
      }),
    }),
  })
  .describe("Validates JWTs on requests, as ngrok's jwt-validation action does.");

type Config = z.output<typeof jwtValidationConfig>;

function keySources(config: Config): KeySource[] {
  const sources: KeySource[] = [];
  const inline = config.jws.keys.sources.inline;
  if (inline?.length) {
    const getKey = inlineKeyGetter(inline as JWK[]);
    sources.push({ current: async () => ({ ok: true, getKey }) });
  }
  for (const url of config.jws.keys.sources.additional_jkus ?? []) sources.push(new RemoteJwks(url));
  return sources;
}

const EMPTY_ERROR = { code: "", message: "" };

export interface JwtValidationVars {
  /** As ngrok's `tokens`: each verified token's header, payload, location, location_property, signature, verified (CEL maps). */
  tokens: ReadonlyArray<ReadonlyMap<string, unknown>>;
  /** The first token's claims as CEL values (Tollgate's): what bucket keys and tiers read. Empty before. */
  claims: ReadonlyMap<string, unknown>;
  /** Why the last jwt-validation refused (ERR_SVC_3401, 3406, 7186 and the reason), else ''. */
  error: ResultError;
}

declare module "./results.ts" {
  interface ActionVars {
    jwt_validation: JwtValidationVars;
  }
}

const JSON_MAP = map(STRING, DYN);

/**
 * `actions.svc.jwt_validation.*` (and `actions.ngrok.…`): what the last jwt-validation verified. `tokens` and
 * `error` as ngrok names them; `claims` is Tollgate's: the first token's claims, for bucket keys and tiers.
 */
const jwtValidationResults = declareResults<JwtValidationVars>(
  "jwt_validation",
  {
    tokens: (at) =>
      list(record(`${at}[]`, { header: JSON_MAP, location: STRING, location_property: STRING, payload: JSON_MAP, signature: STRING, verified: BOOL })),
    claims: JSON_MAP,
    error: ERROR_SHAPE,
  },
  () => ({ tokens: [], claims: new Map(), error: noError() }),
);

export const jwtValidationAction = defineAction({
  type: "jwt-validation",
  config: jwtValidationConfig,
  configOptional: false,
  results: jwtValidationResults,
  simulation: {
    skip: (config) => ((config.jws.keys.sources.additional_jkus?.length ?? 0) > 0 ? "jwt-validation fetches its JWKS from a URL: not simulated" : undefined),
    check: true,
  },
  compile(config, context) {
    if (context.phase !== "inbound") return { path: [], message: "runs only on requests (inbound, ngrok's on_http_request), as ngrok's does" };
    for (const [index, token] of config.http.tokens.entries()) {
      if (token.method === "header" && !isHeaderName(token.name))
        return { path: ["http", "tokens", index, "name"], message: `'${token.name}' is not a header name` };
    }
    if ((context.origin ?? "tenant") === "tenant") {
      const index = (config.jws.keys.sources.additional_jkus ?? []).findIndex((url) => !url.startsWith("https://"));
      if (index >= 0) return { path: ["jws", "keys", "sources", "additional_jkus", index], message: "must be an https:// URL in a tunnel's policy" };
    }
    // Per compiled policy, so per isolate: the JWKS held, and when each URL may next be fetched.
    const settings: VerifierSettings = {
      issuers: config.issuer.allow_list.map(({ value }) => value),
      audiences: config.audience?.allow_list.map(({ value }) => value),
      algorithms: config.jws.allowed_algorithms,
      sources: keySources(config),
    };
    const refuse = (vars: JwtValidationVars, status: number, code: number, message: string, challenge?: string) => {
      vars.error = { code: `ERR_SVC_${code}`, message };
      const headers: Record<string, string> = challenge === undefined ? {} : { "www-authenticate": challenge };
      return new ServiceError(status, code, message, { details: { action: context.position }, headers }).toResponse();
    };
    return {
      type: "jwt-validation",
      async run(exchange: Exchange) {
        const vars = exchange.vars.jwt_validation;
        const tokens: Array<ReadonlyMap<string, unknown>> = [];
        let claims: ReadonlyMap<string, unknown> = new Map();
        for (const location of config.http.tokens) {
          const located = await locateToken(exchange, location);
          if (!located.ok && located.busy) {
            vars.error = { code: `ERR_SVC_${ErrorCode.jwtMissing}`, message: located.busy.message };
            return busyResponse(located.busy, ErrorCode.jwtMissing, { action: context.position });
          }
          if (!located.ok) return refuse(vars, 401, ErrorCode.jwtMissing, `Token could not be found in request: ${located.reason}.`, "Bearer");
          const verdict = await verifyToken(located.token, settings, Date.now());
          if (!verdict.ok && verdict.unavailable) return refuse(vars, 503, ErrorCode.jwksUnavailable, `The token could not be verified: ${verdict.reason}.`);
          const value = verdict.ok ? claimsValue(verdict.payload) : undefined;
          if (!verdict.ok || !value?.ok) {
            const reason = verdict.ok ? (value as { message: string }).message : verdict.reason;
            return refuse(
              vars,
              401,
              ErrorCode.jwtInvalid,
              `Your request lacks valid credentials: ${reason}.`,
              `Bearer error="invalid_token", error_description="${reason}"`,
            );
          }
          const header = claimsValue(verdict.header as Record<string, unknown>);
          tokens.push(
            new Map<string, unknown>([
              ["header", header.ok ? header.value : new Map()],
              ["location", location.method],
              ["location_property", location.name],
              ["payload", value.value],
              ["signature", verdict.signature],
              ["verified", true],
            ]),
          );
          if (tokens.length === 1) claims = value.value;
        }
        vars.tokens = tokens;
        vars.claims = claims;
        vars.error = EMPTY_ERROR;
        return undefined;
      },
    };
  },
});

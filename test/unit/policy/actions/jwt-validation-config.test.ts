/**
 * jwt-validation's config as ngrok documents it (its example loads unchanged) and each mistake as a located
 * load error; the action on an exchange: result variables, the token in a header or a body field.
 */

import { describe, expect, it } from "vitest";
import { jwtValidationAction, jwtValidationConfig, MAX_INLINE_KEYS, MAX_JWKS_URLS } from "../../../../src/policy/actions/jwt-validation.ts";
import { expressionCompiler } from "../../../../src/policy/cel.ts";
import type { ActionServices, Exchange } from "../../../../src/policy/exchange.ts";
import { RequestBody } from "../../../../src/policy/request-body.ts";
import { claims, newKey } from "../../support/jwt-signer.ts";
import { makeExchange } from "../../support/exchange.ts";
import { MemoryCounter } from "../../support/memory-counter.ts";
import { lines, load, problems } from "../../support/policy-text.ts";
import { compiledStep } from "../../support/compiled-step.ts";

const services: ActionServices = { counter: new MemoryCounter(0) };

/** ngrok's basic example (traffic-policy/actions/jwt-validation), as its docs print it. */
const NGROK_EXAMPLE = lines(
  "on_http_request:",
  "  - actions:",
  "      - type: jwt-validation",
  "        config:",
  "          issuer:",
  "            allow_list:",
  "              - value: https://example.com/issuer",
  "          audience:",
  "            allow_list:",
  "              - value: urn:example:api",
  "          http:",
  "            tokens:",
  "              - type: access_token",
  "                method: header",
  "                name: Authorization",
  "                prefix: 'Bearer '",
  "              - type: it+jwt",
  "                method: body",
  "                name: _id_token",
  "          jws:",
  "            allowed_algorithms:",
  "              - RS256",
  "              - ES256",
  "            keys:",
  "              sources:",
  "                additional_jkus:",
  "                  - https://example.com/issuer/jku",
);

const withJws = (jws: string, extra = "") =>
  lines(
    "on_http_request:",
    "  - actions:",
    "      - type: jwt-validation",
    "        config:",
    "          issuer: { allow_list: [{ value: 'https://issuer.test/' }] }",
    "          http: { tokens: [{ type: jwt, method: header, name: Authorization, prefix: 'Bearer ' }] }",
    `          jws: ${jws}`,
    extra,
  );

describe("jwt-validation config", () => {
  it("loads ngrok's documented example unchanged", () => {
    expect(problems(NGROK_EXAMPLE)).toEqual([]);
  });

  it("refuses alg none and names what is verified", () => {
    expect(problems(withJws("{ allowed_algorithms: [none], keys: { sources: { additional_jkus: ['https://x.test/jwks'] } } }"))).toEqual([
      "policies/api.yaml:7: on_http_request[0].actions[0].config.jws.allowed_algorithms[0]: 'none' is never accepted: unsigned tokens prove nothing; Tollgate verifies RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, HS256, HS384, HS512, EdDSA",
    ]);
  });

  it("refuses a config without any key", () => {
    expect(problems(withJws("{ allowed_algorithms: [RS256], keys: { sources: {} } }"))).toEqual([
      "policies/api.yaml:7: on_http_request[0].actions[0].config.jws.keys.sources: must give at least one key: additional_jkus or inline",
    ]);
  });

  it("refuses a private key, a short HMAC secret and a key missing its members", () => {
    const found = problems(
      withJws(
        "{ allowed_algorithms: [RS256, HS256], keys: { sources: { inline: [{ kty: RSA, n: abc, e: AQAB, d: secret }, { kty: oct, k: c2hvcnQ }, { kty: EC, crv: P-256, x: abc }] } } }",
      ),
    );
    expect(found).toEqual([
      expect.stringContaining("config.jws.keys.sources.inline[0]: is a private key (d): give the public key only"),
      expect.stringContaining("config.jws.keys.sources.inline[1].k: must be at least 32 bytes (RFC 7518 §3.2)"),
      expect.stringContaining("config.jws.keys.sources.inline[2].y: is required for a EC key"),
    ]);
  });

  it(`refuses more than ${MAX_JWKS_URLS} JWKS URLs and more than ${MAX_INLINE_KEYS} inline keys`, () => {
    const urls = Array.from({ length: MAX_JWKS_URLS + 1 }, (_, i) => `https://x.test/${i}`);
    const result = jwtValidationConfig.safeParse({
      issuer: { allow_list: [{ value: "i" }] },
      http: { tokens: [{ type: "jwt", method: "header", name: "Authorization" }] },
      jws: {
        allowed_algorithms: ["HS256"],
        keys: { sources: { additional_jkus: urls, inline: Array.from({ length: MAX_INLINE_KEYS + 1 }, () => newKey("HS256").jwk) } },
      },
    });
    expect(result.success ? [] : result.error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`)).toEqual([
      `jws.keys.sources.additional_jkus: exceeds the limit of ${MAX_JWKS_URLS} URLs`,
      `jws.keys.sources.inline: exceeds the limit of ${MAX_INLINE_KEYS} keys`,
    ]);
  });

  it("refuses interpolation, a non-URL, and runs only on requests", () => {
    expect(problems(withJws("{ allowed_algorithms: [RS256], keys: { sources: { additional_jkus: ['${vars.url}', 'ftp://x.test/k'] } } }"))).toEqual([
      expect.stringContaining("additional_jkus[0]: must be written out: ${…} is not evaluated in jwt-validation's config"),
      expect.stringContaining("additional_jkus[1]: must be an http(s) URL without credentials"),
    ]);
    const outbound = withJws("{ allowed_algorithms: [RS256], keys: { sources: { additional_jkus: ['https://x.test/k'] } } }").replace(
      "on_http_request",
      "on_http_response",
    );
    expect(problems(outbound)).toEqual([expect.stringContaining("runs only on requests (inbound, ngrok's on_http_request), as ngrok's does")]);
  });

  it("asks a tunnel's policy for https JWKS URLs, and lets an operator's use http", () => {
    const config = jwtValidationConfig.parse({
      issuer: { allow_list: [{ value: "i" }] },
      http: { tokens: [{ type: "jwt", method: "header", name: "Authorization" }] },
      jws: { allowed_algorithms: ["RS256"], keys: { sources: { additional_jkus: ["http://127.0.0.1:9/jwks"] } } },
    });
    expect(jwtValidationAction.compile(config, { phase: "inbound", position: "p", origin: "tenant", expressions: expressionCompiler() })).toEqual({
      path: ["jws", "keys", "sources", "additional_jkus", 0],
      message: "must be an https:// URL in a tunnel's policy",
    });
    expect(jwtValidationAction.compile(config, { phase: "inbound", position: "p", origin: "operator", expressions: expressionCompiler() })).toHaveProperty(
      "run",
    );
  });
});

describe("jwt-validation on an exchange", () => {
  const key = newKey("ES256");
  const now = Math.floor(Date.now() / 1000);
  const compile = (tokens: unknown[]) =>
    compiledStep(
      jwtValidationAction.compile(
        jwtValidationConfig.parse({
          issuer: { allow_list: [{ value: "https://issuer.test/" }] },
          audience: { allow_list: [{ value: "urn:tollgate:api" }] },
          http: { tokens },
          jws: { allowed_algorithms: ["ES256"], keys: { sources: { inline: [key.jwk] } } },
        }),
        { phase: "inbound", position: "inbound[0].actions[0]", expressions: expressionCompiler() },
      ),
    );

  it("sets claims, tokens and an empty error for a verified token", async () => {
    const exchange = makeExchange({ headers: { authorization: `bearer ${key.sign({}, claims(now, { plan: "pro" }))}` } });
    expect(await compile([{ type: "jwt", method: "header", name: "authorization", prefix: "Bearer " }]).run(exchange, services)).toBeUndefined();
    const vars = exchange.vars.jwt_validation;
    expect(vars.claims.get("sub")).toBe("user-1");
    expect(vars.claims.get("plan")).toBe("pro");
    expect(vars.error).toEqual({ code: "", message: "" });
    expect(vars.tokens).toHaveLength(1);
    expect(vars.tokens[0].get("location_property")).toBe("authorization");
    expect(vars.tokens[0].get("verified")).toBe(true);
    expect((vars.tokens[0].get("header") as Map<string, unknown>).get("kid")).toBe(key.kid);
  });

  it("reads a token from a form body and from a JSON body, and sends the body on whole", async () => {
    const token = key.sign({}, claims(now));
    const body = (text: string, type: string): Exchange => {
      const base = makeExchange({ method: "POST", headers: { "content-type": type } });
      return { ...base, request: { ...base.request, body: new RequestBody(new Response(text).body) } };
    };
    const action = compile([{ type: "it+jwt", method: "body", name: "_id_token" }]);
    const form = body(`a=1&_id_token=${token}`, "application/x-www-form-urlencoded");
    expect(await action.run(form, services)).toBeUndefined();
    const read = await form.request.body!.read();
    expect(read.ok && new TextDecoder().decode(read.bytes)).toBe(`a=1&_id_token=${token}`);
    expect(await action.run(body(JSON.stringify({ _id_token: token }), "application/json"), services)).toBeUndefined();
    const missing = await action.run(body(JSON.stringify({ other: token }), "application/json"), services);
    expect(missing?.status).toBe(401);
  });

  it("requires every configured token: one missing answers 401 ERR_SVC_3406", async () => {
    const exchange = makeExchange({ headers: { authorization: `Bearer ${key.sign({}, claims(now))}` } });
    const answer = await compile([
      { type: "jwt", method: "header", name: "Authorization", prefix: "Bearer " },
      { type: "id_token", method: "header", name: "X-Id-Token" },
    ]).run(exchange, services);
    expect(answer?.status).toBe(401);
    expect(await answer?.json()).toMatchObject({ error_code: "ERR_SVC_3406", msg: "Token could not be found in request: the header X-Id-Token is missing." });
    expect(exchange.vars.jwt_validation.error.code).toBe("ERR_SVC_3406");
  });
});

it("a policy reads the claims in expressions: actions.svc.jwt_validation.claims.sub", () => {
  expect(() =>
    load(
      lines(
        NGROK_EXAMPLE.trimEnd(),
        "  - expressions: [\"actions.svc.jwt_validation.claims.sub == 'x' && actions.ngrok.jwt_validation.tokens[0].verified\"]",
        "    actions: [{ type: deny }]",
      ),
    ),
  ).not.toThrow();
});

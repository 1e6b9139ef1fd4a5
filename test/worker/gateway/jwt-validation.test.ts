/**
 * jwt-validation through the Worker's pipeline to a real local upstream, with tokens signed here by WebCrypto
 * (crypto.subtle, not jose): verified callers get through and are limited per subject, whatever header they
 * send; missing, forged, expired, wrong-audience, wrong-issuer and alg-none tokens are answered 401, and a
 * JWKS that cannot be fetched 503 (fail closed).
 */

import { inject } from "vitest";
import { describe, expect, it } from "vitest";
import { send, singleEdge } from "./harness.ts";

const upstream = `http://127.0.0.1:${inject("upstreamPort")}`;
const ISSUER = "https://issuer.test/";
const AUDIENCE = "urn:tollgate:api";

const text = (value: string) => btoa(value).replaceAll("+", "-").replaceAll("/", "_").replaceAll("=", "");
const bytes = (value: ArrayBuffer) => text(String.fromCharCode(...new Uint8Array(value)));

interface Signer {
  readonly jwk: JsonWebKey & { kid: string };
  token(payload: Record<string, unknown>, header?: Record<string, unknown>): Promise<string>;
}

async function signer(alg: "RS256" | "ES256" | "HS256", kid: string): Promise<Signer> {
  const params =
    alg === "RS256"
      ? { name: "RSASSA-PKCS1-v1_5", modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: "SHA-256" }
      : alg === "ES256"
        ? { name: "ECDSA", namedCurve: "P-256" }
        : { name: "HMAC", hash: "SHA-256", length: 256 };
  const generated = (await crypto.subtle.generateKey(params, true, ["sign", "verify"])) as CryptoKeyPair | CryptoKey;
  const signing = "privateKey" in generated ? generated.privateKey : generated;
  const exported = (await crypto.subtle.exportKey("jwk", "publicKey" in generated ? generated.publicKey : generated)) as JsonWebKey;
  const { key_ops: _ops, ext: _ext, ...jwk } = exported;
  const signParams = alg === "ES256" ? { name: "ECDSA", hash: "SHA-256" } : params;
  return {
    jwk: { ...jwk, kid, alg },
    async token(payload, header = {}) {
      const input = `${text(JSON.stringify({ alg, kid, typ: "JWT", ...header }))}.${text(JSON.stringify(payload))}`;
      return `${input}.${bytes(await crypto.subtle.sign(signParams, signing, new TextEncoder().encode(input)))}`;
    },
  };
}

const rsa = await signer("RS256", "rsa-1");
const ec = await signer("ES256", "ec-1");
const hs = await signer("HS256", "hs-1");
const impostor = await signer("RS256", "rsa-1");

const now = () => Math.floor(Date.now() / 1000);
const claims = (extra: Record<string, unknown> = {}) => ({ iss: ISSUER, aud: AUDIENCE, sub: "user-1", exp: now() + 600, ...extra });

const jwtValidation = (sources: string) => `
      - type: jwt-validation
        config:
          issuer: { allow_list: [{ value: "${ISSUER}" }] }
          audience: { allow_list: [{ value: "${AUDIENCE}" }] }
          http: { tokens: [{ type: access_token, method: header, name: Authorization, prefix: "Bearer " }] }
          jws: { allowed_algorithms: [RS256, ES256, HS256], keys: { sources: ${sources} } }`;

const routes = singleEdge(
  `      - { id: api, match: /api, upstream: ${upstream}/svc, traffic_policy: api.yaml }
      - { id: down, match: /down, upstream: ${upstream}/svc, traffic_policy: down.yaml }
      - { id: tiers, match: /tiers, upstream: ${upstream}/svc, traffic_policy: tiers.yaml }
`,
  {
    "policies/api.yaml": `on_http_request:
  - actions:${jwtValidation(`{ inline: ${JSON.stringify([rsa.jwk, ec.jwk, hs.jwk])} }`)}
      - type: remove-headers
        config: { headers: [x-jwt-sub] }
      - type: add-headers
        config: { headers: { x-jwt-sub: "\${actions.svc.jwt_validation.claims.sub}" } }
      - type: rate-limit
        config: { name: per-subject, capacity: 3, rate: 60s, bucket_key: [actions.svc.jwt_validation.claims.sub] }
  - expressions: ["actions.svc.jwt_validation.claims.plan == 'pro'"]
    actions:
      - type: add-headers
        config: { headers: { x-plan: pro } }
`,
    "policies/tiers.yaml": `on_http_request:
  - actions:${jwtValidation(`{ inline: ${JSON.stringify([rsa.jwk])} }`)}
      - type: rate-limit
        config:
          name: per-plan
          bucket_key: [actions.svc.jwt_validation.claims.sub]
          windows: [{ capacity: 1, rate: 60s }]
          tiers:
            - when: "actions.svc.jwt_validation.claims.plan == 'pro'"
              windows: [{ capacity: 3, rate: 60s }]
`,
    "policies/down.yaml": `on_http_request:
  - actions:${jwtValidation(`{ additional_jkus: ["${upstream}/status/500"] }`)}
`,
  },
);

const call = (path: string, token?: string, headers: Record<string, string> = {}) =>
  send(
    routes,
    new Request(`http://gw.test${path}`, {
      headers: { "cf-connecting-ip": "198.51.100.9", ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
    }),
  );

interface Seen {
  url: string;
  headers: Record<string, string>;
}

describe("jwt-validation on a route", () => {
  it.each([
    ["RS256", rsa],
    ["ES256", ec],
    ["HS256", hs],
  ])("lets a %s token through and puts its subject where the policy says", async (_alg, key) => {
    const response = await call("/api/a", await key.token(claims({ sub: `subject-${key.jwk.kid}` })));
    expect(response.status).toBe(200);
    const seen = (await response.json()) as Seen;
    expect(seen.url).toBe("/svc/api/a");
    expect(seen.headers["x-jwt-sub"]).toBe(`subject-${key.jwk.kid}`);
  });

  it("answers a request without a token 401 ERR_SVC_3406 with WWW-Authenticate: Bearer", async () => {
    const response = await call("/api/a");
    expect(response.status).toBe(401);
    expect(response.headers.get("www-authenticate")).toBe("Bearer");
    expect(await response.json()).toMatchObject({
      error_code: "ERR_SVC_3406",
      status_code: 401,
      msg: "Token could not be found in request: the header Authorization is missing.",
    });
  });

  it.each([
    ["forged (another key, same kid)", () => impostor.token(claims()), "no configured key verifies the token's signature"],
    ["expired", () => rsa.token(claims({ exp: now() - 120 })), "the token has expired"],
    ["for another audience", () => ec.token(claims({ aud: "urn:someone-else" })), "the token's audience is not allowed"],
    ["from another issuer", () => hs.token(claims({ iss: "https://evil.test/" })), "the token's issuer is not allowed"],
    [
      "unsigned (alg none)",
      async () => `${text(JSON.stringify({ alg: "none" }))}.${text(JSON.stringify(claims()))}.`,
      "unsigned tokens (alg none) are never accepted",
    ],
  ])("answers a token %s 401 ERR_SVC_3401, and the upstream never sees it", async (_what, make, reason) => {
    const response = await call("/api/a", await make());
    expect(response.status).toBe(401);
    expect(response.headers.get("www-authenticate")).toBe(`Bearer error="invalid_token", error_description="${reason}"`);
    expect(await response.json()).toMatchObject({ error_code: "ERR_SVC_3401", msg: `Your request lacks valid credentials: ${reason}.` });
  });

  it("limits per verified subject: a header the client sends picks no other bucket", async () => {
    const alice = await rsa.token(claims({ sub: "alice" }));
    const bob = await ec.token(claims({ sub: "bob" }));
    const statuses: number[] = [];
    for (const spoof of ["", "a", "b", "c"]) {
      const response = await call("/api/x", alice, spoof ? { "x-jwt-sub": spoof } : {});
      statuses.push(response.status);
      await response.body?.cancel();
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
    const other = await call("/api/x", bob);
    expect(other.status).toBe(200);
    await other.body?.cancel();
  });

  it("gives later entries the claims: a plan claim picks a tier", async () => {
    const pro = (await (await call("/api/p", await hs.token(claims({ sub: "pro-user", plan: "pro" })))).json()) as Seen;
    expect(pro.headers["x-plan"]).toBe("pro");
    const free = (await (await call("/api/p", await hs.token(claims({ sub: "free-user", plan: "free" })))).json()) as Seen;
    expect(free.headers["x-plan"]).toBeUndefined();
  });

  it("picks a rate-limit tier by the verified plan claim", async () => {
    const run = async (token: string, count: number) => {
      const out: number[] = [];
      for (let i = 0; i < count; i++) {
        const response = await call("/tiers", token);
        out.push(response.status);
        await response.body?.cancel();
      }
      return out;
    };
    expect(await run(await rsa.token(claims({ sub: "tier-pro", plan: "pro" })), 4)).toEqual([200, 200, 200, 429]);
    expect(await run(await rsa.token(claims({ sub: "tier-free", plan: "free" })), 2)).toEqual([200, 429]);
  });

  it("answers 503 ERR_SVC_7186 when the JWKS cannot be fetched, and lets nothing through", async () => {
    const response = await call("/down/a", await rsa.token(claims()));
    expect(response.status).toBe(503);
    expect(await response.json()).toMatchObject({
      error_code: "ERR_SVC_7186",
      msg: `The token could not be verified: the JWKS at ${upstream}/status/500 could not be fetched (HTTP 500).`,
    });
  });
});

describe("jwt-validation with a JWKS served by a local server", () => {
  const name = `jwks-${Math.random().toString(36).slice(2, 10)}`;
  const jwksUrl = `${upstream}/jwks/${name}`;
  const publish = (...keys: Signer[]) =>
    fetch(jwksUrl, { method: "PUT", body: JSON.stringify({ keys: keys.map((key) => key.jwk) }) }).then((r) => r.body?.cancel());
  const fetched = async () => Number((await fetch(jwksUrl, { method: "HEAD" })).headers.get("x-jwks-hits"));
  const jwksRoutes = singleEdge(`      - { id: jwks, match: /jwks, upstream: ${upstream}/svc, traffic_policy: jwks.yaml }\n`, {
    "policies/jwks.yaml": `on_http_request:\n  - actions:${jwtValidation(`{ additional_jkus: ["${jwksUrl}"] }`)}\n`,
  });
  const status = async (token: string) => {
    const response = await send(jwksRoutes, new Request("http://gw.test/jwks/a", { headers: { authorization: `Bearer ${token}` } }));
    await response.body?.cancel();
    return response.status;
  };

  it("fetches the JWKS once, serves from the cache, follows a rotation by kid, and is not hammered by unknown kids", async () => {
    await publish(rsa);
    expect(await status(await rsa.token(claims()))).toBe(200);
    expect(await fetched()).toBe(1);
    for (let i = 0; i < 5; i++) expect(await status(await rsa.token(claims({ sub: `s${i}` })))).toBe(200);
    expect(await fetched()).toBe(1);

    const rotated = await signer("ES256", "ec-rotated");
    await publish(rsa, rotated);
    expect(await status(await rotated.token(claims()))).toBe(200);
    expect(await fetched()).toBe(2);

    const stranger = await signer("ES256", "unused");
    for (let i = 0; i < 20; i++) expect(await status(await stranger.token(claims(), { kid: `random-${i}` }))).toBe(401);
    expect(await fetched()).toBe(2);
    expect(await status(await rotated.token(claims()))).toBe(200);
  });
});

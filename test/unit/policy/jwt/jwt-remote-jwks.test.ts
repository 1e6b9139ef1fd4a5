/**
 * JWKS URLs of jwt-validation against a real local HTTP server (node:http) and an injected clock: fetched
 * once and cached, refreshed after the TTL and for an unknown kid (rotation), never more than once per
 * cooldown whatever kids arrive, kept stale for a while when the issuer is down, bounded in bytes and keys,
 * and failing closed when there is nothing to verify with.
 */

import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JWKS_COOLDOWN_MS, JWKS_STALE_GRACE_MS, JWKS_TTL_MS, MAX_JWKS_BYTES, MAX_JWKS_KEYS, RemoteJwks } from "../../../../src/policy/jwt/remote-jwks.ts";
import { verifyToken, type VerifierSettings } from "../../../../src/policy/jwt/verify-token.ts";
import { claims, newKey, type TestKey } from "../../support/jwt-signer.ts";

/** What each path serves: a JSON document, or a status to fail with. */
const served = new Map<string, { status: number; body: string }>();
const hits = new Map<string, number>();
let server: Server;
let base = "";

beforeAll(async () => {
  server = createServer((request, response) => {
    const path = request.url ?? "/";
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const answer = served.get(path) ?? { status: 404, body: "{}" };
    response.writeHead(answer.status, { "content-type": "application/json" });
    response.end(answer.body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

let paths = 0;
/** A fresh path serving the keys' JWKS, so tests do not share hit counts. */
function publish(...keys: TestKey[]): string {
  const path = `/jwks/${paths++}`;
  serve(path, ...keys);
  return path;
}
const serve = (path: string, ...keys: TestKey[]) => served.set(path, { status: 200, body: JSON.stringify({ keys: keys.map((key) => key.jwk) }) });

class Clock {
  constructor(public ms = 1_800_000_000_000) {}
  readonly now = () => this.ms;
}

function setup(path: string) {
  const clock = new Clock();
  const jwks = new RemoteJwks(`${base}${path}`, { now: clock.now });
  const settings: VerifierSettings = { issuers: ["https://issuer.test/"], audiences: ["urn:tollgate:api"], algorithms: ["RS256", "ES256"], sources: [jwks] };
  const verify = (key: TestKey, extra: Record<string, unknown> = {}) => verifyToken(key.sign(extra, claims(Math.floor(clock.ms / 1000))), settings, clock.ms);
  return { clock, jwks, verify };
}

describe("a JWKS URL", () => {
  it("is fetched on first use and served from memory until its TTL", async () => {
    const key = newKey("RS256");
    const path = publish(key);
    const { clock, verify } = setup(path);
    expect(await verify(key)).toMatchObject({ ok: true });
    clock.ms += JWKS_TTL_MS - 1;
    for (let i = 0; i < 5; i++) expect(await verify(key)).toMatchObject({ ok: true });
    expect(hits.get(path)).toBe(1);
    clock.ms += 1;
    expect(await verify(key)).toMatchObject({ ok: true });
    expect(hits.get(path)).toBe(2);
  });

  it("is fetched again for a kid it lacks: a rotated key verifies at once", async () => {
    const old = newKey("RS256");
    const next = newKey("ES256");
    const path = publish(old);
    const { clock, verify } = setup(path);
    expect(await verify(old)).toMatchObject({ ok: true });
    serve(path, old, next);
    expect(await verify(next)).toMatchObject({ ok: true, header: { kid: next.kid } });
    expect(hits.get(path)).toBe(2);
    serve(path, next);
    clock.ms += JWKS_TTL_MS;
    expect(await verify(old)).toMatchObject({ ok: false, unavailable: false, reason: "no configured key verifies the token's signature" });
  });

  it("is fetched for unknown kids at most once per cooldown however many arrive", async () => {
    const key = newKey("RS256");
    const path = publish(key);
    const { clock, verify } = setup(path);
    expect(await verify(key)).toMatchObject({ ok: true });
    const flood = await Promise.all(Array.from({ length: 200 }, (_, i) => verify(key, { kid: `random-${i}` })));
    expect(flood.every((verdict) => !verdict.ok && !verdict.unavailable)).toBe(true);
    for (let i = 0; i < 299; i++) {
      clock.ms += 100;
      await verify(key, { kid: `more-${i}` });
    }
    // The first use, then one fetch for 500 unknown kids over 29.9 s.
    expect(hits.get(path)).toBe(2);
    clock.ms += 100;
    await verify(key, { kid: "after-the-cooldown" });
    expect(hits.get(path)).toBe(3);
    expect(await verify(key)).toMatchObject({ ok: true });
    expect(hits.get(path)).toBe(3);
  });

  it("fails closed when it cannot be fetched, and does not ask again within the cooldown", async () => {
    const key = newKey("RS256");
    const path = "/down";
    served.set(path, { status: 500, body: "oops" });
    const { clock, verify } = setup(path);
    const verdict = await verify(key);
    expect(verdict).toEqual({ ok: false, unavailable: true, reason: `the JWKS at ${base}/down could not be fetched (HTTP 500)` });
    for (let i = 0; i < 10; i++) await verify(key, { kid: `unknown-${i}` });
    expect(hits.get(path)).toBe(1);
    clock.ms += JWKS_COOLDOWN_MS;
    serve(path, key);
    expect(await verify(key)).toMatchObject({ ok: true });
  });

  it("keeps a stale set while the issuer is down, for the grace period only", async () => {
    const key = newKey("ES256");
    const path = publish(key);
    const { clock, verify } = setup(path);
    expect(await verify(key)).toMatchObject({ ok: true });
    served.set(path, { status: 503, body: "" });
    clock.ms += JWKS_TTL_MS;
    expect(await verify(key)).toMatchObject({ ok: true });
    clock.ms += JWKS_STALE_GRACE_MS;
    expect(await verify(key)).toMatchObject({ ok: false, unavailable: true });
  });

  it(`refuses a document over ${MAX_JWKS_BYTES} bytes and one of more than ${MAX_JWKS_KEYS} keys`, async () => {
    const key = newKey("RS256");
    served.set("/huge", { status: 200, body: JSON.stringify({ keys: [key.jwk], pad: "x".repeat(MAX_JWKS_BYTES) }) });
    expect(await setup("/huge").verify(key)).toMatchObject({
      ok: false,
      unavailable: true,
      reason: `the JWKS at ${base}/huge could not be fetched (larger than ${MAX_JWKS_BYTES} bytes)`,
    });
    served.set("/many", { status: 200, body: JSON.stringify({ keys: Array.from({ length: MAX_JWKS_KEYS + 1 }, () => key.jwk) }) });
    expect(await setup("/many").verify(key)).toMatchObject({
      ok: false,
      unavailable: true,
      reason: expect.stringContaining(`${MAX_JWKS_KEYS + 1} keys, more than the ${MAX_JWKS_KEYS}`),
    });
    served.set("/not-jwks", { status: 200, body: JSON.stringify({ issuer: "x" }) });
    expect(await setup("/not-jwks").verify(key)).toMatchObject({ ok: false, unavailable: true, reason: expect.stringContaining("not a JWKS") });
  });

  it("shares one fetch among requests that arrive while it runs", async () => {
    const key = newKey("RS256");
    const path = publish(key);
    const { verify } = setup(path);
    const verdicts = await Promise.all(Array.from({ length: 20 }, () => verify(key)));
    expect(verdicts.every((verdict) => verdict.ok)).toBe(true);
    expect(hits.get(path)).toBe(1);
  });
});

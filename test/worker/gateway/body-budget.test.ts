/**
 * The isolate's body budget through the Worker's pipeline: uploads that stall while verify-webhook or
 * jwt-validation reads them hold their bytes of their party's share, the party's next body-reading request is
 * answered 503 with retry-after while another party's is served, and once the stalled uploads are aborted the
 * budget is back to 0 and requests pass again.
 */

import { inject, vi } from "vitest";
import { afterEach, describe, expect, it } from "vitest";
import { BodyBudget, type BodyBudgetLimits, OPERATOR_PARTY } from "../../../src/policy/body-budget.ts";
import { createRuntime } from "../../../src/runtime.ts";
import { newIsolate, send, singleEdge } from "./harness.ts";

/** Ceilings for a busy machine, not behaviour under test (vi.waitFor gives up after 1 s by default). */
const SETTLES = { timeout: 10_000, interval: 20 };

const upstream = `http://127.0.0.1:${inject("upstreamPort")}`;
const SECRET = "budget-secret";
const CHUNK = 16 * 1024;
/** Four stalled chunks fill a party's share; the idle time is far beyond any test's length. */
const LIMITS: BodyBudgetLimits = { totalBytes: 8 * CHUNK, partyBytes: 4 * CHUNK, clientBytes: 4 * CHUNK, readIdleMs: 600_000, retryAfterSeconds: 2 };

const hook = `on_http_request:\n  - actions:\n      - type: verify-webhook\n        config: { provider: github, secret: ${SECRET} }\n`;
const jwt = [
  "on_http_request:",
  "  - actions:",
  "      - type: jwt-validation",
  "        config:",
  "          issuer: { allow_list: [{ value: https://issuer.test }] }",
  "          http: { tokens: [{ type: jwt, method: body, name: token }] }",
  "          jws:",
  "            allowed_algorithms: [HS256]",
  "            keys: { sources: { inline: [{ kty: oct, k: c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA, alg: HS256 }] } }",
  "",
].join("\n");

/** Routes /a, /c and /e (party a: a webhook, a JWT in the body, the echo upstream), /b (party b). */
const routes = singleEdge(
  `      - { id: tenant-a, match: /a, upstream: ${upstream}/hooks, traffic_policy: hook.yaml }
      - { id: tenant-a-jwt, match: /c, upstream: ${upstream}/hooks, traffic_policy: jwt.yaml }
      - { id: tenant-b, match: /b, upstream: ${upstream}/hooks, traffic_policy: hook.yaml }
      - { id: tenant-a-echo, match: /e, upstream: echo }
`,
  { "policies/hook.yaml": hook, "policies/jwt.yaml": jwt },
);

/** An isolate whose routes /a and /c count against party a, /b against party b. */
function budgetedIsolate() {
  const budget = new BodyBudget(LIMITS);
  const partyOf = (scope: string) => (scope.endsWith("/tenant-b") ? "b" : "a");
  return { isolate: { ...newIsolate(), bodies: { budget, partyOf } }, budget };
}

async function signature(body: Uint8Array): Promise<string> {
  const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(SECRET), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, body));
  return `sha256=${[...mac].map((byte) => byte.toString(16).padStart(2, "0")).join("")}`;
}

const signedBody = new TextEncoder().encode('{"event":"push"}');

async function signedHook(path: string): Promise<Request> {
  return new Request(`http://gw.test${path}`, { method: "POST", headers: { "x-hub-signature-256": await signature(signedBody) }, body: signedBody });
}

/** Uploads that send one chunk and then nothing, until aborted (the client vanishing mid-upload). */
const stalled: Array<ReadableStreamDefaultController<Uint8Array>> = [];
function stalledUpload(path: string, client?: string): Request {
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      stalled.push(controller);
      controller.enqueue(new Uint8Array(CHUNK));
    },
  });
  const headers: Record<string, string> = { "x-hub-signature-256": `sha256=${"0".repeat(64)}` };
  if (client) headers["cf-connecting-ip"] = client;
  return new Request(`http://gw.test${path}`, { method: "POST", headers, body });
}

function abortStalled(): void {
  for (const controller of stalled.splice(0)) controller.error(new Error("the client went away"));
}
afterEach(abortStalled);

describe("the isolate's body budget", () => {
  it("answers a party's webhook 503 with retry-after while its stalled uploads fill its share, serves another party's, and passes again once they are aborted", async () => {
    const { isolate, budget } = budgetedIsolate();
    const uploads = Array.from({ length: 4 }, () => send(routes, stalledUpload("/a"), {}, undefined, isolate));
    await vi.waitFor(() => expect(budget.heldBy("a")).toBe(4 * CHUNK), SETTLES);

    const refused = await send(routes, await signedHook("/a"), {}, undefined, isolate);
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe("2");
    expect(await refused.json()).toMatchObject({
      error_code: "ERR_SVC_3204",
      status_code: 503,
      msg: `The request body could not be read: the gateway holds as many request bodies as it may (${4 * CHUNK} bytes per client, ${4 * CHUNK} per owner, ${8 * CHUNK} in all); send it again in 2 s.`,
      details: { retry_after: 2, provider: "github" },
    });

    const other = await send(routes, await signedHook("/b"), {}, undefined, isolate);
    expect(other.status).toBe(200);
    expect(budget.heldBy("b")).toBe(0);

    abortStalled();
    for (const upload of await Promise.all(uploads)) expect(upload.status).toBe(400);
    expect(budget.heldBytes).toBe(0);
    const again = await send(routes, await signedHook("/a"), {}, undefined, isolate);
    expect(again.status).toBe(200);
  });

  it("hostile: one client's stalled uploads hold at most its share; the same owner's webhooks from other clients are served", async () => {
    const budget = new BodyBudget({ ...LIMITS, clientBytes: 2 * CHUNK });
    const isolate = { ...newIsolate(), bodies: { budget, partyOf: () => "a" } };
    const answered: number[] = [];
    const uploads = Array.from({ length: 4 }, () =>
      send(routes, stalledUpload("/a", "203.0.113.9"), {}, undefined, isolate).then((answer) => answered.push(answer.status)),
    );
    // Whichever two come first hold the client's share; the other two are answered at once.
    await vi.waitFor(() => expect(answered).toEqual([503, 503]), SETTLES);
    expect(budget.heldByClient("203.0.113.9")).toBe(2 * CHUNK);
    expect(budget.heldBy("a")).toBe(2 * CHUNK);

    const fromAnother = await signedHook("/a");
    fromAnother.headers.set("cf-connecting-ip", "198.51.100.7");
    expect((await send(routes, fromAnother, {}, undefined, isolate)).status).toBe(200);
    abortStalled();
    await Promise.all(uploads);
    expect(budget.heldBytes).toBe(0);
  });

  it("refuses a body whose declared length does not fit before reading it, and a JWT read from the body the same", async () => {
    const { isolate, budget } = budgetedIsolate();
    const uploads = Array.from({ length: 3 }, () => send(routes, stalledUpload("/a"), {}, undefined, isolate));
    await vi.waitFor(() => expect(budget.heldBy("a")).toBe(3 * CHUNK), SETTLES);

    const declared = new Uint8Array(CHUNK + 1);
    const tooMuch = await send(
      routes,
      new Request("http://gw.test/a", { method: "POST", headers: { "x-hub-signature-256": await signature(declared) }, body: declared }),
      {},
      undefined,
      isolate,
    );
    expect(tooMuch.status).toBe(503);
    expect(budget.heldBy("a")).toBe(3 * CHUNK);

    const token = new TextEncoder().encode(JSON.stringify({ token: "x".repeat(CHUNK + 1) }));
    const jwtRefused = await send(
      routes,
      new Request("http://gw.test/c", { method: "POST", headers: { "content-type": "application/json" }, body: token }),
      {},
      undefined,
      isolate,
    );
    expect(jwtRefused.status).toBe(503);
    expect(jwtRefused.headers.get("retry-after")).toBe("2");
    expect(await jwtRefused.json()).toMatchObject({ error_code: "ERR_SVC_3406", status_code: 503 });

    abortStalled();
    await Promise.all(uploads);
    expect(budget.heldBytes).toBe(0);
    // Within the budget again, the body is read and judged: no token of this issuer, so 401, not 503.
    const judged = await send(
      routes,
      new Request("http://gw.test/c", { method: "POST", headers: { "content-type": "application/json" }, body: token }),
      {},
      undefined,
      isolate,
    );
    expect(judged.status).toBe(401);
  });

  it("answers every party 503 once stalled uploads of several fill the isolate's total", async () => {
    const { isolate, budget } = budgetedIsolate();
    const uploads = [
      ...Array.from({ length: 4 }, () => send(routes, stalledUpload("/a"), {}, undefined, isolate)),
      ...Array.from({ length: 4 }, () => send(routes, stalledUpload("/b"), {}, undefined, isolate)),
    ];
    await vi.waitFor(() => expect(budget.heldBytes).toBe(8 * CHUNK), SETTLES);
    expect((await send(routes, await signedHook("/b"), {}, undefined, isolate)).status).toBe(503);
    abortStalled();
    await Promise.all(uploads);
    expect(budget.heldBytes).toBe(0);
    expect((await send(routes, await signedHook("/b"), {}, undefined, isolate)).status).toBe(200);
  });

  it("reads the echo upstream's body within the budget too, and at most 1 MiB of it", async () => {
    const { isolate, budget } = budgetedIsolate();
    const uploads = Array.from({ length: 4 }, () => send(routes, stalledUpload("/e"), {}, undefined, isolate));
    await vi.waitFor(() => expect(budget.heldBy("a")).toBe(4 * CHUNK), SETTLES);
    const refused = await send(routes, new Request("http://gw.test/e", { method: "POST", body: "hi" }), {}, undefined, isolate);
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe("2");
    abortStalled();
    await Promise.all(uploads);
    expect(budget.heldBytes).toBe(0);
    const echoed = await send(routes, new Request("http://gw.test/e", { method: "POST", body: "hi" }), {}, undefined, isolate);
    expect(((await echoed.json()) as { body: string }).body).toBe("hi");
    // An isolate of the Worker's own budget: its party's 4 MiB hold the body, the 1 MiB bound does not.
    const worker = { ...newIsolate(), bodies: { budget: new BodyBudget(), partyOf: () => "a" } };
    const big = await send(routes, new Request("http://gw.test/e", { method: "POST", body: new Uint8Array(1024 * 1024 + 1) }), {}, undefined, worker);
    expect(big.status).toBe(413);
    expect(worker.bodies.budget.heldBytes).toBe(0);
  });

  it("in the Worker's isolate memory, counts a tunnel's reads against its account and every route against the operator", () => {
    const runtime = createRuntime();
    const claim = (tunnelId: string, accountId: string) => ({ accountId, sessionId: `ts_${tunnelId}`, tunnelId });
    runtime.tunnelHosts.remember("shop", [claim("tn_1", "acct_a")]);
    runtime.tunnelHosts.remember("blog", [claim("tn_2", "acct_a"), claim("tn_3", "acct_b")]);
    expect(runtime.bodies.partyOf("tunnel:tn_1")).toBe("account:acct_a");
    expect(runtime.bodies.partyOf("tunnel:tn_2")).toBe("account:acct_a");
    expect(runtime.bodies.partyOf("tunnel:tn_3")).toBe("account:acct_b");
    expect(runtime.bodies.partyOf("route:edge/hooks")).toBe(OPERATOR_PARTY);
    // A tunnel whose host is no longer remembered still counts against a party of its own, never the operator's.
    expect(runtime.bodies.partyOf("tunnel:tn_9")).toBe("tunnel:tn_9");
    expect(runtime.bodies.budget.limits).toMatchObject({ totalBytes: 16 * 1024 * 1024, partyBytes: 4 * 1024 * 1024 });
  });
});

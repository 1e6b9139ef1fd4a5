import { runInNewContext } from "node:vm";
import { setFlagsFromString } from "node:v8";
import { describe, expect, it } from "vitest";
import { CaptureStore, type CaptureChange } from "../../src/agent/capture/capture-store.ts";
import { BodyBuffer, MAX_BLOCK_BYTES } from "../../src/agent/capture/body-buffer.ts";
import { subscribeChanges, type ChangeBatch } from "../../src/agent/capture/change-feed.ts";
import { HeaderBlock } from "../../src/agent/capture/header-block.ts";
import { captureIdFactory, isCaptureId } from "../../src/agent/capture/ids.ts";
import { captureView, rfc3339 } from "../../src/agent/capture/view.ts";
import type { ExchangeInfo, ExchangeObserver } from "../../src/agent/edge/exchange.ts";

const MiB = 1024 * 1024;
let streams = 0;

function info(overrides: Partial<ExchangeInfo> = {}): ExchangeInfo {
  return {
    key: `test:${++streams}`,
    tunnelName: "web",
    tunnelId: "tn_1",
    inspect: true,
    start: new Date("2026-03-01T12:00:00.250Z"),
    startNs: process.hrtime.bigint(),
    method: "POST",
    target: "/orders?x=1",
    headers: [
      ["host", "abc.localhost:8787"],
      ["content-type", "application/json"],
      ["x-tag", "a"],
      ["X-Tag", "b"],
      ["x-forwarded-for", "203.0.113.7"],
    ],
    remoteAddr: "203.0.113.7",
    scheme: "http",
    ...overrides,
  };
}

function run(
  observer: ExchangeObserver | undefined,
  { request = [] as Uint8Array[], response = [] as Uint8Array[], status = 200, durationNs = 1_234_567n, close = true } = {},
) {
  for (const chunk of request) observer?.onRequestBody?.(chunk);
  observer?.onRequestEnd?.();
  observer?.onResponseHead?.({
    status,
    statusText: status === 200 ? "OK" : "",
    headers: [
      ["content-type", "application/json"],
      ["set-cookie", "a=1"],
      ["set-cookie", "b=2"],
    ],
    httpVersion: "1.1",
  });
  for (const chunk of response) observer?.onResponseBody?.(chunk);
  observer?.onResponseEnd?.(durationNs);
  if (close) observer?.onClose?.({ durationNs });
}

const text = (value: string) => new TextEncoder().encode(value);
const decode = (raw: string) => Buffer.from(raw, "base64").toString("latin1");

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

/** Heap plus ArrayBuffers after collecting; buffers are freed by a background sweeper, so wait for it to settle. */
async function settled(): Promise<number> {
  let last = Infinity;
  for (let round = 0; round < 10; round++) {
    gc();
    await new Promise((resolve) => setTimeout(resolve, 20));
    const { heapUsed, arrayBuffers } = process.memoryUsage();
    if (Math.abs(heapUsed + arrayBuffers - last) < 256 * 1024) break;
    last = heapUsed + arrayBuffers;
  }
  return last;
}

/**
 * 100 headers as the relay's frame decoder hands them over (fresh strings from JSON.parse), each
 * exchange's values its own: mostly short, every tenth 200 characters, every tenth not Latin-1.
 */
function heavyHeaders(exchange: number, side: string): Array<[string, string]> {
  const headers: Array<[string, string]> = [];
  for (let h = 0; h < 100; h++) {
    const value = h % 10 === 0 ? `${"long-value/".repeat(18)}${side}${exchange}` : h % 10 === 1 ? `grüße €→ ${side}${exchange}` : `${side}${exchange}.${h}`;
    headers.push([`x-${side}-header-${h}`, value]);
  }
  return JSON.parse(JSON.stringify(headers)) as Array<[string, string]>;
}

describe("captured-request ids", () => {
  it("are airt_ and a ULID, strictly increasing as text even within one millisecond and when the clock goes back", () => {
    let now = 1_700_000_000_000;
    const next = captureIdFactory(() => now);
    const ids = [next(), next(), next()];
    now -= 5000;
    ids.push(next());
    now += 10_000;
    ids.push(next());
    for (const id of ids) expect(isCaptureId(id), id).toBe(true);
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe("capturing an exchange", () => {
  it("records every field of ngrok's shape, raw messages as base64 of the HTTP/1.1 bytes, duration in integer nanoseconds", () => {
    const store = new CaptureStore({ maxBytes: 10 * MiB });
    run(store.tap.open(info()), { request: [text('{"item":'), text("42}")], response: [text('{"ok":true}')], durationNs: 1_234_567n });
    const [exchange] = store.list({ limit: 10 });
    const view = captureView(exchange);
    expect(view).toMatchObject({
      uri: `/api/requests/http/${view.id}`,
      tunnel_name: "web",
      remote_addr: "203.0.113.7",
      duration: 1_234_567,
      request: {
        method: "POST",
        proto: "HTTP/1.1",
        uri: "/orders?x=1",
        headers: { Host: ["abc.localhost:8787"], "Content-Type": ["application/json"], "X-Tag": ["a", "b"], "X-Forwarded-For": ["203.0.113.7"] },
        truncated: false,
        body_length: 11,
      },
      response: { status: "200 OK", status_code: 200, proto: "HTTP/1.1", headers: { "Set-Cookie": ["a=1", "b=2"] }, truncated: false, body_length: 11 },
      state: "complete",
      error: null,
      replay_of: null,
    });
    expect(view.id).toMatch(/^airt_[0-9A-Z]{26}$/);
    expect(view.start).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d$/);
    expect(new Date(view.start).toISOString()).toBe("2026-03-01T12:00:00.250Z");
    expect(Number.isInteger(view.duration)).toBe(true);
    expect(decode(view.request.raw)).toBe(
      "POST /orders?x=1 HTTP/1.1\r\nhost: abc.localhost:8787\r\ncontent-type: application/json\r\nx-tag: a\r\nX-Tag: b\r\nx-forwarded-for: 203.0.113.7\r\n\r\n" +
        '{"item":42}',
    );
    expect(decode(view.response!.raw)).toBe('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nset-cookie: a=1\r\nset-cookie: b=2\r\n\r\n{"ok":true}');
  });

  it("shows response null and the time so far while the local service has not answered", () => {
    const store = new CaptureStore({ maxBytes: MiB });
    const observer = store.tap.open(info({ method: "GET", target: "/slow" }));
    observer?.onRequestEnd?.();
    const view = captureView(store.list({ limit: 1 })[0]);
    expect(view.response).toBeNull();
    expect(view.state).toBe("pending");
    expect(Number.isInteger(view.duration) && view.duration >= 0).toBe(true);
  });

  it("records how an exchange failed, and the standard reason when the server sent none", () => {
    const store = new CaptureStore({ maxBytes: MiB });
    const failed = store.tap.open(info());
    failed?.onClose?.({ durationNs: 5n, error: { code: "upstream_unreachable", message: "could not connect to http://localhost:1" } });
    run(store.tap.open(info()), { status: 404 });
    const [notFound, refused] = store.list({ limit: 2 }).map(captureView);
    expect(refused).toMatchObject({ state: "failed", response: null, error: { code: "upstream_unreachable" }, duration: 5 });
    expect(notFound.response).toMatchObject({ status: "404 Not Found", status_code: 404 });
  });

  it("captures nothing of a tunnel with inspect: false", () => {
    const store = new CaptureStore({ maxBytes: MiB });
    expect(store.tap.open(info({ inspect: false }))).toBeUndefined();
    expect(store.size).toBe(0);
    expect(store.bytes).toBe(0);
  });

  it("keeps each body up to the cap and marks it truncated, with the full length", () => {
    const store = new CaptureStore({ maxBytes: 64 * MiB, bodyCapBytes: 1000 });
    run(store.tap.open(info()), { request: [new Uint8Array(600).fill(97), new Uint8Array(600).fill(98)], response: [new Uint8Array(999).fill(99)] });
    const view = captureView(store.list({ limit: 1 })[0]);
    expect(view.request).toMatchObject({ truncated: true, body_length: 1200 });
    expect(decode(view.request.raw).split("\r\n\r\n")[1]).toBe("a".repeat(600) + "b".repeat(400));
    expect(view.response).toMatchObject({ truncated: false, body_length: 999 });
  });

  it("never lets one body take more than a quarter of the store", () => {
    expect(new CaptureStore({ maxBytes: 400_000, bodyCapBytes: MiB }).bodyCapBytes).toBe(100_000);
  });
});

describe("what an exchange keeps", () => {
  it("keeps headers exactly as relayed, in order: Latin-1, UTF-16 with lone surrogates, empty and long values, repeated names", () => {
    const headers: Array<[string, string]> = [
      ["x-latin", "grüße ÿ\u0080"],
      ["x-wide", "€ 漢字 \ud83d\ude00 \ud800 lone"],
      ["x-empty", ""],
      ["X-Tag", "a"],
      ["x-tag", "b"],
      ["x-long", "v".repeat(20_000)],
      ["x-wide-long", "€".repeat(9_000)],
    ];
    const block = HeaderBlock.of(headers);
    expect(block.list()).toEqual(headers);
    // one byte a character for Latin-1, two for the rest, and a 1–3 byte length before each string
    const characters = headers.reduce((sum, [name, value]) => sum + name.length + value.length * (/[^\x00-\xff]/.test(value) ? 2 : 1), 0);
    expect(block.byteLength - characters).toBeGreaterThanOrEqual(2 * headers.length);
    expect(block.byteLength - characters).toBeLessThanOrEqual(3 * 2 * headers.length);
    expect(HeaderBlock.of([]).list()).toEqual([]);
  });

  it("keeps a body sent in tiny chunks byte for byte, in blocks that grow with it, and exactly its bytes once sealed", () => {
    const body = new BodyBuffer(300_000);
    const sent = Uint8Array.from({ length: 250_000 }, (_, i) => (i * 7) % 256);
    for (let i = 0; i < sent.length; i += 3) body.add(sent.subarray(i, i + 3));
    const same = (bytes: Uint8Array) => Buffer.from(sent).equals(bytes);
    expect(same(body.bytes())).toBe(true);
    const running = body.retainedBytes;
    // room past the kept bytes: at most one largest block; and a few hundred bytes for each of ~10 blocks
    expect(running - sent.length).toBeLessThan(MAX_BLOCK_BYTES + 16 * 512);
    body.seal();
    expect(body.retainedBytes).toBeLessThan(running);
    expect(same(body.bytes())).toBe(true);
    expect(body.bytes()).toBe(body.bytes());
  });
});

describe("the size bound", () => {
  it("evicts oldest first once the total passes maxBytes, telling listeners", () => {
    const store = new CaptureStore({ maxBytes: 100_000, bodyCapBytes: 20_000 });
    const changes: CaptureChange[] = [];
    store.onChange((change) => changes.push(change));
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      run(store.tap.open(info({ target: `/${i}` })), { request: [new Uint8Array(20_000)] });
      ids.push(store.list({ limit: 1 })[0].id);
      expect(store.bytes).toBeLessThanOrEqual(100_000);
    }
    const kept = store.list({ limit: 1000 }).map((exchange) => exchange.id);
    expect(kept.length).toBeGreaterThan(2);
    expect(kept).toEqual(ids.slice(-kept.length).reverse());
    const removed = changes.flatMap((change) => (change.type === "remove" ? change.ids : []));
    expect(removed).toEqual(ids.slice(0, ids.length - kept.length));
  });

  it("stops counting the bytes of an exchange evicted while it still runs", () => {
    const store = new CaptureStore({ maxBytes: 40_000, bodyCapBytes: 10_000 });
    const slow = store.tap.open(info({ target: "/slow" }));
    for (let i = 0; i < 10; i++) run(store.tap.open(info()), { request: [new Uint8Array(9000)] });
    expect(store.list({ limit: 100 }).some((exchange) => exchange.request.target === "/slow")).toBe(false);
    const before = store.bytes;
    run(slow, { request: [new Uint8Array(9000)], response: [new Uint8Array(9000)] });
    expect(store.bytes).toBe(before);
  });

  it("holds under a flood of large requests: accounted bytes within the bound, heap flat", { timeout: 30_000 }, async () => {
    const maxBytes = 8 * MiB;
    const store = new CaptureStore({ maxBytes });
    const chunk = new Uint8Array(64 * 1024).fill(7);
    let peak = 0;
    const flood = (count: number) => {
      for (let i = 0; i < count; i++) {
        const observer = store.tap.open(info({ target: `/upload/${i}` }));
        // 3 MiB up (past the 1 MiB cap), 512 KiB down, in 64 KiB chunks as the relay delivers them
        run(observer, { request: Array.from({ length: 48 }, () => chunk), response: Array.from({ length: 8 }, () => chunk) });
        peak = Math.max(peak, store.bytes);
      }
    };
    flood(50); // warm up: the store is full from here on
    const before = await settled();
    flood(400); // 1.4 GiB of bodies through the tap
    const after = await settled();
    console.log(
      `capture flood: store ${store.size} exchanges, ${(store.bytes / MiB).toFixed(2)} MiB accounted, peak ${(peak / MiB).toFixed(2)} MiB (bound 8 MiB); ` +
        `heap+buffers ${(before / MiB).toFixed(1)} → ${(after / MiB).toFixed(1)} MiB`,
    );
    expect(peak).toBeLessThanOrEqual(maxBytes);
    expect(store.bytes).toBeGreaterThan(maxBytes * 0.6);
    // flat: what 1.4 GiB went through leaves less behind than a few stores' worth (noise of a busy test process included)
    expect(after - before).toBeLessThan(3 * maxBytes);
  });
});

describe("the size bound in memory", () => {
  /**
   * Heap growth of a store filled well past its bound by `fill`, measured after collecting; a first fill of
   * a store thrown away warms up (optimized code is heap too, and is made once).
   */
  async function retainedBy(maxBytes: number, fill: (store: CaptureStore) => void): Promise<{ store: CaptureStore; retained: number }> {
    fill(new CaptureStore({ maxBytes }));
    const before = await settled();
    const store = new CaptureStore({ maxBytes });
    fill(store);
    const retained = (await settled()) - before;
    return { store, retained };
  }

  it("charges header-heavy exchanges what they retain: a full store holds at most 1.1 × inspect_db_size of heap", { timeout: 60_000 }, async () => {
    const maxBytes = 8 * MiB;
    let evicted = 0;
    const { store, retained } = await retainedBy(maxBytes, (store) => {
      evicted = 0;
      store.onChange((change) => void (change.type === "remove" && (evicted += change.ids.length)));
      for (let i = 0; evicted < 3 * store.size || i < 100; i++) {
        const observer = store.tap.open(info({ target: `/heavy/${i}`, headers: heavyHeaders(i, "q") }));
        observer?.onRequestBody?.(text(`{"n":${i}}`));
        observer?.onResponseHead?.({ status: 200, statusText: "OK", headers: heavyHeaders(i, "r"), httpVersion: "1.1" });
        observer?.onResponseBody?.(text(`{"ok":${i}}`));
        observer?.onClose?.({ durationNs: 1000n });
      }
    });
    console.log(
      `header-heavy capture: ${store.size} exchanges kept (${evicted} evicted), ${(store.bytes / MiB).toFixed(2)} MiB charged, heap+buffers grew ${(retained / MiB).toFixed(2)} MiB (bound ${maxBytes / MiB} MiB)`,
    );
    expect(store.bytes).toBeLessThanOrEqual(maxBytes);
    expect(store.bytes).toBeGreaterThan(0.95 * maxBytes);
    expect(retained).toBeLessThanOrEqual(1.1 * maxBytes);
    // and the charge is not a wild over-estimate that would keep far fewer requests than the bound allows
    expect(retained).toBeGreaterThan(0.7 * maxBytes);
  });

  it("charges bodies still arriving in tiny chunks what they retain", { timeout: 60_000 }, async () => {
    const maxBytes = 4 * MiB;
    const piece = new Uint8Array(64).fill(42);
    let opened = 0;
    const { store, retained } = await retainedBy(maxBytes, (store) => {
      opened = 0;
      // 3 × the bound of bodies, 64 KiB each way per exchange, 64 bytes at a time, none of them finished
      for (let i = 0; i < (3 * maxBytes) / (128 * 1024); i++) {
        const observer = store.tap.open(info({ target: `/trickle/${i}` }));
        opened++;
        for (let b = 0; b < 1024; b++) observer?.onRequestBody?.(piece);
        observer?.onResponseHead?.({ status: 200, statusText: "OK", headers: [["content-type", "text/plain"]], httpVersion: "1.1" });
        for (let b = 0; b < 1024; b++) observer?.onResponseBody?.(piece);
      }
    });
    console.log(
      `trickled bodies: ${store.size} running exchanges kept, ${(store.bytes / MiB).toFixed(2)} MiB charged, heap+buffers grew ${(retained / MiB).toFixed(2)} MiB (bound ${maxBytes / MiB} MiB)`,
    );
    expect(opened).toBe(96);
    expect(store.list({ limit: 1 })[0]).toMatchObject({ state: "pending", request: { body: { kept: 64 * 1024 } } });
    expect(store.bytes).toBeLessThanOrEqual(maxBytes);
    expect(store.bytes).toBeGreaterThan(0.9 * maxBytes);
    expect(retained).toBeLessThanOrEqual(1.1 * maxBytes);
  });
});

describe("listing", () => {
  it("lists newest first, up to the limit, by tunnel name", () => {
    const store = new CaptureStore({ maxBytes: MiB });
    for (const name of ["a", "b", "a", "b", "a"]) run(store.tap.open(info({ tunnelName: name })));
    const all = store.list({ limit: 10 });
    expect(all.map((exchange) => exchange.id)).toEqual(
      all
        .map((exchange) => exchange.id)
        .sort()
        .reverse(),
    );
    expect(store.list({ limit: 2 })).toEqual(all.slice(0, 2));
    expect(store.list({ limit: 10, tunnelName: "a" }).map((exchange) => exchange.tunnelName)).toEqual(["a", "a", "a"]);
    expect(store.list({ limit: 10, tunnelName: "nope" })).toEqual([]);
    store.clear();
    expect(store.list({ limit: 10 })).toEqual([]);
    expect(store.bytes).toBe(0);
  });
});

describe("the change feed", () => {
  it("merges the changes of a window into one batch with each exchange in its latest state", async () => {
    const store = new CaptureStore({ maxBytes: MiB });
    const batches: ChangeBatch[] = [];
    const stop = subscribeChanges(store, (batch) => void batches.push(batch), { intervalMs: 20 });
    run(store.tap.open(info()));
    run(store.tap.open(info()));
    await expect.poll(() => batches.length).toBe(1);
    expect(batches[0].upsert.map((summary) => summary.state)).toEqual(["complete", "complete"]);
    store.clear();
    run(store.tap.open(info({ target: "/after" })));
    await expect.poll(() => batches.length).toBe(2);
    expect(batches[1]).toMatchObject({ clear: true, remove: [], upsert: [{ uri: "/after", status_code: 200 }] });
    stop();
    expect(store.listenerCount).toBe(0);
  });
});

describe("rfc3339", () => {
  it("writes local time with a numeric offset", () => {
    const date = new Date();
    expect(new Date(rfc3339(date)).getTime()).toBe(date.getTime());
  });
});

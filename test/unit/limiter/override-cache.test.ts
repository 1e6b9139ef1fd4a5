import { describe, expect, it } from "vitest";
import { AWAIT_AFTER_MS, OverrideCache, REFRESH_AFTER_MS } from "../../../src/limiter/override-cache.ts";
import type { LimitOverride } from "../../../src/limiter/override-match.ts";
import { OverrideIndex } from "../../../src/limiter/override-match.ts";
import { overrideServices } from "../../../src/limiter/override-service.ts";

const SCOPE = "route:edghts_local/edghtsrt_demo";

function override(id: string, key: string, version = "1", capacity = 50): LimitOverride {
  return { id, scope: SCOPE, action: "per-client", key, windows: [{ capacity, windowMs: 60_000 }], labels: ["60s"], version };
}

/** A store that answers what the test put in it, counting reads. */
function store(initial: LimitOverride[] = []) {
  const state = { overrides: initial, reads: 0, failing: false };
  const read = async () => {
    state.reads++;
    if (state.failing) throw new Error("the store is unreachable");
    return state.overrides;
  };
  return { state, read };
}

/**
 * A store whose reads wait until the test releases them (one each), and a cache whose sleeps move the test's clock:
 * requests waiting for another's read look at it on this clock, counted in `looks`.
 */
function slowStore(clock: { now: number }, initial: LimitOverride[]) {
  const state = { overrides: initial, reads: 0, failing: false };
  const gates: Array<() => void> = [];
  let released = 0;
  const read = async () => {
    state.reads++;
    await new Promise<void>((open) => (gates.length < released ? open() : gates.push(open)));
    if (state.failing) throw new Error("the store is unreachable");
    return state.overrides;
  };
  const release = () => {
    released++;
    gates.shift()?.();
  };
  // Virtual time: a sleep wakes when `advance` moves the clock past it, in order.
  const looks = { count: 0 };
  const timers: Array<{ at: number; wake: () => void }> = [];
  const sleep = (ms: number) => {
    looks.count++;
    return new Promise<void>((wake) => timers.push({ at: clock.now + ms, wake }));
  };
  const turn = () => new Promise((resolve) => setImmediate(resolve));
  const advance = async (to: number) => {
    for (;;) {
      await turn();
      timers.sort((a, b) => a.at - b.at);
      const next = timers[0];
      if (next === undefined || next.at > to) break;
      timers.shift();
      clock.now = Math.max(clock.now, next.at);
      next.wake();
    }
    clock.now = Math.max(clock.now, to);
    await turn();
  };
  return { cache: new OverrideCache({ now: () => clock.now, sleep }), state, read, release, looks, advance };
}

/** Runs what a request left for after its response, as the runtime would. */
function background() {
  const tasks: Promise<unknown>[] = [];
  return { waitUntil: (task: Promise<unknown>) => tasks.push(task), settle: () => Promise.all(tasks.splice(0)) };
}

describe("the isolate's copy of an account's overrides", () => {
  it("the first request reads the store; later ones within 250 ms use the copy without reading", async () => {
    const clock = { now: 1_000_000 };
    const cache = new OverrideCache({ now: () => clock.now });
    const { state, read } = store([override("rlo_1", "k")]);
    const first = cache.indexOf("acct_dev", read);
    expect(first).toBeInstanceOf(Promise);
    expect((await first).match(SCOPE, "per-client", "k", clock.now)?.id).toBe("rlo_1");
    clock.now += REFRESH_AFTER_MS - 1;
    expect(cache.indexOf("acct_dev", read, background())).toBeInstanceOf(OverrideIndex);
    expect(state.reads).toBe(1);
  });

  it("past 250 ms the copy still answers, and one refresh goes out after the response; it lands for the next request", async () => {
    const clock = { now: 1_000_000 };
    const cache = new OverrideCache({ now: () => clock.now });
    const { state, read } = store([override("rlo_1", "k", "1", 50)]);
    await cache.indexOf("acct_dev", read);
    clock.now += REFRESH_AFTER_MS;
    state.overrides = [override("rlo_1", "k", "2", 80)];
    const after = background();
    const stale = cache.indexOf("acct_dev", read, after) as OverrideIndex;
    expect(stale.match(SCOPE, "per-client", "k", clock.now)?.windows[0]?.capacity).toBe(50);
    // A second request meanwhile sends no second refresh.
    cache.indexOf("acct_dev", read, after);
    await after.settle();
    expect(state.reads).toBe(2);
    const fresh = cache.indexOf("acct_dev", read, background()) as OverrideIndex;
    expect(fresh.match(SCOPE, "per-client", "k", clock.now)?.windows[0]?.capacity).toBe(80);
  });

  it("past 900 ms no copy is used: the request reads the store itself", async () => {
    const clock = { now: 1_000_000 };
    const cache = new OverrideCache({ now: () => clock.now });
    const { state, read } = store([override("rlo_1", "k")]);
    await cache.indexOf("acct_dev", read);
    state.overrides = [];
    clock.now += AWAIT_AFTER_MS;
    const answer = cache.indexOf("acct_dev", read, background());
    expect(answer).toBeInstanceOf(Promise);
    expect((await answer).match(SCOPE, "per-client", "k", clock.now)).toBeUndefined();
    expect(cache.stats.awaitedReads).toBe(2);
  });

  it("a burst finding the copy too old sends one read; the others wait for it on their own timers", async () => {
    const clock = { now: 1_000_000 };
    const { cache, state, read, release, looks, advance } = slowStore(clock, [override("rlo_1", "k", "1", 50)]);
    const first = cache.indexOf("acct_dev", read);
    release();
    await first;
    state.overrides = [override("rlo_1", "k", "2", 80)];
    clock.now += AWAIT_AFTER_MS;
    const start = clock.now;
    const burst = Array.from({ length: 1_000 }, () => cache.indexOf("acct_dev", read, background()));
    expect(burst.every((answer) => answer instanceof Promise)).toBe(true);
    await advance(start + 5);
    release();
    await advance(start + 100);
    const answers = await Promise.all(burst);
    expect(answers.every((index) => index.match(SCOPE, "per-client", "k", clock.now)?.windows[0]?.capacity === 80)).toBe(true);
    expect(state.reads).toBe(2);
    expect(cache.stats).toMatchObject({ awaitedReads: 2, sharedReads: 999 });
    // Each waiting request looked a few times (at 2, 6 and 14 ms), not once a millisecond.
    expect(looks.count).toBeLessThanOrEqual(999 * 3);
  });

  it("hostile: a store that never answers within 900 ms costs the waiting requests one read each after it, not a wait without end", async () => {
    const clock = { now: 1_000_000 };
    const { cache, state, read, release, advance } = slowStore(clock, [override("rlo_1", "k")]);
    const start = clock.now;
    const first = cache.indexOf("acct_dev", read);
    const waiting = Promise.all(Array.from({ length: 10 }, () => cache.indexOf("acct_dev", read)));
    // The first read stays out; once it is 900 ms old one waiter sends a read of its own, and the rest wait for that one.
    await advance(start + AWAIT_AFTER_MS + 64);
    expect(state.reads).toBe(2);
    release();
    release();
    await advance(start + AWAIT_AFTER_MS + 200);
    for (const index of await waiting) expect(index.match(SCOPE, "per-client", "k", clock.now)?.id).toBe("rlo_1");
    await first;
    expect(state.reads).toBe(2);
  });

  it("a shared read that fails answers its waiters with the action's own limits, and the next request reads again", async () => {
    const clock = { now: 1_000_000 };
    const { cache, state, read, release, advance } = slowStore(clock, [override("rlo_1", "k")]);
    state.failing = true;
    const first = cache.indexOf("acct_dev", read);
    const waiting = Array.from({ length: 5 }, () => cache.indexOf("acct_dev", read));
    const original = console.error;
    console.error = () => {};
    try {
      release();
      await advance(clock.now + 10);
      for (const answer of await Promise.all([first, ...waiting])) expect(answer.match(SCOPE, "per-client", "k", clock.now)).toBeUndefined();
    } finally {
      console.error = original;
    }
    expect(state.reads).toBe(1);
    state.failing = false;
    const again = cache.indexOf("acct_dev", read);
    release();
    expect((await again).match(SCOPE, "per-client", "k", clock.now)?.id).toBe("rlo_1");
    expect(state.reads).toBe(2);
  });

  it("a read that fails applies the action's own limits (no stale copy) and logs at most once a second", async () => {
    const clock = { now: 1_000_000 };
    const cache = new OverrideCache({ now: () => clock.now });
    const { state, read } = store([override("rlo_1", "k")]);
    await cache.indexOf("acct_dev", read);
    state.failing = true;
    clock.now += AWAIT_AFTER_MS;
    const logged: unknown[] = [];
    const original = console.error;
    console.error = (...args: unknown[]) => logged.push(args);
    try {
      for (let i = 0; i < 5; i++) expect((await cache.indexOf("acct_dev", read)).match(SCOPE, "per-client", "k", clock.now)).toBeUndefined();
    } finally {
      console.error = original;
    }
    expect(logged).toHaveLength(1);
    expect(cache.stats.failedReads).toBe(5);
  });

  it("an unchanged override keeps its object across refreshes, so what a request compiled from it stays", async () => {
    const clock = { now: 1_000_000 };
    const cache = new OverrideCache({ now: () => clock.now });
    const { state, read } = store([override("rlo_1", "k")]);
    const before = (await cache.indexOf("acct_dev", read)).match(SCOPE, "per-client", "k", clock.now);
    state.overrides = [override("rlo_1", "k")];
    clock.now += AWAIT_AFTER_MS;
    const after = (await cache.indexOf("acct_dev", read)).match(SCOPE, "per-client", "k", clock.now);
    expect(after).toBe(before);
  });

  it("remembers at most maxAccounts accounts, the least recently read forgotten first", async () => {
    const clock = { now: 1_000_000 };
    const cache = new OverrideCache({ now: () => clock.now, maxAccounts: 2 });
    const { state, read } = store();
    for (const account of ["a", "b", "c"]) await cache.indexOf(account, read);
    expect(state.reads).toBe(3);
    expect(cache.indexOf("c", read)).toBeInstanceOf(OverrideIndex);
    expect(cache.indexOf("a", read)).toBeInstanceOf(Promise);
  });
});

describe("the overrides service on the default path", () => {
  it("a scope with no owning account asks nothing; an account without overrides answers from its copy", async () => {
    const clock = { now: 1_000_000 };
    const { state, read } = store();
    const services = overrideServices<object>(new OverrideCache({ now: () => clock.now }), {
      read: () => read(),
      accountOf: (_, scope) => (scope.startsWith("route:") ? "acct_dev" : undefined),
    });
    const env = {};
    const service = services(env);
    expect(services(env)).toBe(service);
    expect(service.find("tunnel:tn_1", "per-client", "k")).toBeUndefined();
    expect(await service.find(SCOPE, "per-client", "k")).toBeUndefined();
    // 100,000 decisions within one copy's life: none waits, none reads.
    let found = 0;
    for (let i = 0; i < 100_000; i++) if (service.find(SCOPE, "per-client", `k${i}`) !== undefined) found++;
    expect(found).toBe(0);
    expect(state.reads).toBe(1);
  });
});

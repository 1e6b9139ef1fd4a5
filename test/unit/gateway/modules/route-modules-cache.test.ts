import { describe, expect, it, vi } from "vitest";
import { MAX_REMEMBERED_ROUTES, MODULES_TTL_MS, RouteModulesCache, type RouteModules } from "../../../../src/gateway/modules/route-modules.ts";

const converter: RouteModules = { websocket_tcp_converter: { enabled: true } };
const off: RouteModules = { websocket_tcp_converter: { enabled: false } };

/** A store read that answers `modules` and counts its calls. */
function reader(modules: RouteModules = converter) {
  return vi.fn(async () => modules);
}

describe("route modules cache", () => {
  it("reads a route's modules once and answers from memory until MODULES_TTL_MS has passed", async () => {
    let now = 1_000;
    const cache = new RouteModulesCache({ now: () => now });
    const read = reader();
    expect(await cache.get("edge/r", read)).toEqual(converter);
    now += MODULES_TTL_MS - 1;
    expect(await cache.get("edge/r", read)).toEqual(converter);
    expect(read).toHaveBeenCalledTimes(1);

    now += 1;
    expect(await cache.get("edge/r", reader(off))).toEqual(off);
    expect(await cache.get("edge/r", read)).toEqual(off);
    expect(read).toHaveBeenCalledTimes(1);
  });

  it("once expired, one request re-reads while the others go on with the expired modules (not a store call each)", async () => {
    let now = 1_000;
    const cache = new RouteModulesCache({ now: () => now });
    await cache.get("edge/r", reader(converter));
    expect(cache.current("edge/r")).toEqual(converter);
    now += MODULES_TTL_MS;
    expect(cache.current("edge/r")).toBeUndefined(); // this request re-reads
    let answer!: (modules: RouteModules) => void;
    const slow = vi.fn(() => new Promise<RouteModules>((resolve) => (answer = resolve)));
    const rereading = cache.get("edge/r", slow);
    for (let i = 0; i < 100; i++) expect(cache.current("edge/r")).toEqual(converter);
    answer(off);
    expect(await rereading).toEqual(off);
    expect(cache.current("edge/r")).toEqual(off);
    expect(slow).toHaveBeenCalledTimes(1);
  });

  it("a re-read that never finishes holds the others for one TTL only", async () => {
    let now = 1_000;
    const cache = new RouteModulesCache({ now: () => now });
    await cache.get("edge/r", reader(converter));
    now += MODULES_TTL_MS;
    void cache.get("edge/r", () => new Promise<RouteModules>(() => {}));
    now += MODULES_TTL_MS - 1;
    expect(cache.current("edge/r")).toEqual(converter);
    now += 1;
    expect(cache.current("edge/r")).toBeUndefined();
  });

  it("remembers each route on its own", async () => {
    const cache = new RouteModulesCache({ now: () => 0 });
    expect(await cache.get("edge/a", reader(converter))).toEqual(converter);
    expect(await cache.get("edge/b", reader(off))).toEqual(off);
    expect(await cache.get("edge/a", reader(off))).toEqual(converter);
  });

  it("a store that cannot be read leaves the last known modules in force, and the failure logged", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    let now = 0;
    const cache = new RouteModulesCache({ now: () => now });
    await cache.get("edge/r", reader(converter));
    now += MODULES_TTL_MS;
    const failing = async (): Promise<RouteModules> => {
      throw new Error("store unavailable");
    };
    expect(await cache.get("edge/r", failing)).toEqual(converter);
    expect(logged).toHaveBeenCalledWith("route edge/r: cannot read its modules, serving without them: store unavailable");
    logged.mockRestore();
  });

  it("a route never read and a store that cannot be read: the route serves without modules", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    const cache = new RouteModulesCache({ now: () => 0 });
    expect(await cache.get("edge/r", () => Promise.reject(new Error("down")))).toEqual({});
    expect(logged).toHaveBeenCalledTimes(1);
    logged.mockRestore();
  });

  it("is bounded: past maxEntries the route stored longest ago is forgotten and read again", async () => {
    const cache = new RouteModulesCache({ now: () => 0, maxEntries: 2 });
    const a = reader();
    await cache.get("edge/a", a);
    await cache.get("edge/b", reader());
    await cache.get("edge/c", reader());
    expect(cache.size).toBe(2);
    await cache.get("edge/a", a);
    expect(a).toHaveBeenCalledTimes(2);
  });

  it("holds at most MAX_REMEMBERED_ROUTES routes by default", async () => {
    const cache = new RouteModulesCache({ now: () => 0 });
    for (let i = 0; i < MAX_REMEMBERED_ROUTES + 10; i++) await cache.get(`edge/r${i}`, reader());
    expect(cache.size).toBe(MAX_REMEMBERED_ROUTES);
  });
});

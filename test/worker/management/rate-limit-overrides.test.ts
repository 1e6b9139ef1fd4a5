import { describe, expect, it } from "vitest";
import { MAX_OVERRIDES_PER_ACTION } from "../../../src/management/store/rate-limit-overrides.ts";
import { call, callError, callJson, RFC3339_UTC } from "./helpers.ts";

const PATH = "/rate_limit_overrides";

interface Override {
  id: string;
  uri: string;
  edge_id: string;
  route_id: string;
  action: string;
  bucket_key: string;
  match: string;
  windows: unknown[];
  expires_at: string | null;
  description: string;
  created_at: string;
  updated_at: string;
}

const base = { edge_id: "edghts_local", route_id: "edghtsrt_demo", action: "demo-per-client" };

function create(body: Record<string, unknown>, key: "devPaging" | "other" = "devPaging"): Promise<Override> {
  return callJson<Override>("POST", PATH, 201, { key, json: { ...base, ...body } });
}

describe("rate-limit overrides: create, list, get, update, delete", () => {
  it("creates an override with capacity + rate and shows it as windows", async () => {
    const created = await create({ bucket_key: "198.51.100.7", capacity: 50, rate: "60s", description: "customer 42 until Friday" });
    expect(created).toMatchObject({
      ...base,
      bucket_key: "198.51.100.7",
      match: "exact",
      windows: [{ capacity: 50, rate: "60s" }],
      expires_at: null,
      description: "customer 42 until Friday",
    });
    expect(created.id).toMatch(/^rlo_[0-9A-Za-z]{27}$/);
    expect(created.uri).toBe(`http://127.0.0.1${PATH}/${created.id}`);
    expect(created.created_at).toMatch(RFC3339_UTC);
    expect(await callJson("GET", `${PATH}/${created.id}`, 200, { key: "devPaging" })).toEqual(created);
  });

  it("takes several windows and a pattern, and an expiry", async () => {
    const expires = new Date(Date.now() + 3_600_000).toISOString().replace(/\.\d{3}Z$/, "Z");
    const created = await create({
      bucket_key: "10.0.*",
      windows: [
        { capacity: 10, rate: "1s" },
        { capacity: 1000, period: "day" },
      ],
      expires_at: expires,
    });
    expect(created).toMatchObject({ match: "pattern", expires_at: expires, description: "" });
    expect(created.windows).toHaveLength(2);
  });

  it("updates limits, expiry and description; the target stays", async () => {
    const created = await create({ bucket_key: "update-me", capacity: 5, rate: "60s" });
    const updated = await callJson<Override>("PATCH", `${PATH}/${created.id}`, 200, {
      key: "devPaging",
      json: { capacity: 9, rate: "120s", description: "raised" },
    });
    expect(updated).toMatchObject({ bucket_key: "update-me", windows: [{ capacity: 9, rate: "120s" }], description: "raised" });
    await callError("PATCH", `${PATH}/${created.id}`, 400, 214, { key: "devPaging", json: { bucket_key: "other" } }, /bucket_key/);
    await callError("PATCH", `${PATH}/${created.id}`, 400, 215, { key: "devPaging", json: { id: "rlo_0000000000000000000000000001" } }, /'id'/);
  });

  it("deletes; a second delete and a get answer 404", async () => {
    const created = await create({ bucket_key: "delete-me", capacity: 5, rate: "60s" });
    expect((await call("DELETE", `${PATH}/${created.id}`, { key: "devPaging" })).status).toBe(204);
    await callError("DELETE", `${PATH}/${created.id}`, 404, 204, { key: "devPaging" });
    await callError("GET", `${PATH}/${created.id}`, 404, 204, { key: "devPaging" });
  });

  it("lists newest first, in pages that neither repeat nor skip", async () => {
    const made: string[] = [];
    for (let i = 0; i < 5; i++) made.push((await create({ bucket_key: `page-${i}`, capacity: 5, rate: "60s" })).id);
    const seen: string[] = [];
    let next: string | null = `${PATH}?limit=2`;
    while (next) {
      const page: { rate_limit_overrides: Override[]; next_page_uri: string | null } = await callJson("GET", next, 200, { key: "devPaging" });
      seen.push(...page.rate_limit_overrides.map((override) => override.id));
      next = page.next_page_uri;
    }
    expect(seen).toEqual([...seen].sort().reverse());
    for (const id of made) expect(seen.filter((seenId) => seenId === id)).toHaveLength(1);
  });

  it("one override per action and key: a second is refused, naming the first", async () => {
    const first = await create({ bucket_key: "twice", capacity: 5, rate: "60s" });
    await callError("POST", PATH, 400, 215, { key: "devPaging", json: { ...base, bucket_key: "twice", capacity: 6, rate: "60s" } }, first.id);
  });
});

describe("rate-limit overrides belong to one account", () => {
  it("another account's key gets 404 for the override and cannot target the edge owner's routes", async () => {
    const created = await create({ bucket_key: "mine", capacity: 5, rate: "60s" });
    await callError("GET", `${PATH}/${created.id}`, 404, 204, { key: "other" });
    await callError("PATCH", `${PATH}/${created.id}`, 404, 204, { key: "other", json: { description: "x" } });
    await callError("DELETE", `${PATH}/${created.id}`, 404, 204, { key: "other" });
    const list = await callJson<{ rate_limit_overrides: Override[] }>("GET", PATH, 200, { key: "other" });
    expect(list.rate_limit_overrides.map((override) => override.id)).not.toContain(created.id);
    await callError("POST", PATH, 404, 204, { key: "other", json: { ...base, bucket_key: "theirs", capacity: 5, rate: "60s" } }, /edghts_local/);
    expect(await callJson("GET", `${PATH}/${created.id}`, 200, { key: "devPaging" })).toMatchObject({ id: created.id });
  });

  it("an unknown route is 404 naming it", async () => {
    await callError("POST", PATH, 404, 204, { key: "devPaging", json: { ...base, route_id: "nope", bucket_key: "k", capacity: 5, rate: "60s" } }, /nope/);
  });
});

describe("rate-limit overrides: hostile and out-of-range input", () => {
  const bad = (body: Record<string, unknown>, code: number, msg: RegExp) =>
    callError("POST", PATH, 400, code, { key: "devPaging", json: { ...base, capacity: 5, rate: "60s", ...body } }, msg);

  it("a bucket_key of 1,025 characters, 17 stars, or none at all", async () => {
    await bad({ bucket_key: "k".repeat(1025) }, 215, /bucket_key' must be 1 to 1024 characters/);
    await bad({ bucket_key: "*".repeat(17) }, 215, /at most 16 '\*'/);
    await bad({ bucket_key: "" }, 215, /bucket_key/);
    await bad({ bucket_key: "\ud800" }, 215, /well-formed Unicode/);
  });

  it("a description of 1,025 characters and an action name of 1,024", async () => {
    await bad({ bucket_key: "k", description: "d".repeat(1025) }, 215, /description' must be 0 to 1024/);
    await bad({ bucket_key: "k", action: "a".repeat(1024) }, 215, /action' must be 1 to 1023/);
  });

  it("limits: nine windows, capacity 0, 2,000,000,001 or 2^53, a rate of 0s or 745h, both forms at once, neither", async () => {
    const nine = Array.from({ length: 9 }, (_, i) => ({ capacity: 1, rate: `${i + 1}s` }));
    await callError("POST", PATH, 400, 215, { key: "devPaging", json: { ...base, bucket_key: "k", windows: nine } }, /windows' must have at most 8/);
    await bad({ bucket_key: "k", capacity: 0 }, 215, /capacity' must be at least 1/);
    await bad({ bucket_key: "k", capacity: 2_000_000_001 }, 215, /capacity' must be at most 2000000000/);
    await bad({ bucket_key: "k", capacity: 2 ** 53 }, 215, /capacity' must be an integer/);
    await bad({ bucket_key: "k", rate: "0s" }, 215, /rate' must be at least 1s/);
    await bad({ bucket_key: "k", rate: "745h" }, 215, /rate' must be at most 744h/);
    await bad({ bucket_key: "k", windows: [{ capacity: 1, rate: "60s" }] }, 215, /capacity' cannot be combined with windows/);
    await callError("POST", PATH, 400, 215, { key: "devPaging", json: { ...base, bucket_key: "k" } }, /capacity' is required/);
  });

  it("an expiry in the past, past 366 days, or not a date", async () => {
    await bad({ bucket_key: "k", expires_at: "2001-01-01T00:00:00Z" }, 215, /expires_at' must be in the future/);
    await bad({ bucket_key: "k", expires_at: new Date(Date.now() + 367 * 86_400_000).toISOString() }, 215, /at most 366 days/);
    await bad({ bucket_key: "k", expires_at: "tomorrow" }, 215, /RFC 3339/);
  });

  it("an unknown field, and an id that cannot be an override's", async () => {
    await bad({ bucket_key: "k", tunnel: "x" }, 214, /'tunnel'/);
    await callError("GET", `${PATH}/bot_0000000000000000000000000001`, 404, 204, { key: "devPaging" });
    await callError("GET", `${PATH}?before_id=bot_0000000000000000000000000001`, 400, 215, { key: "devPaging" }, /before_id/);
  });

  it(`at most ${MAX_OVERRIDES_PER_ACTION} overrides of one action: the next is refused`, async () => {
    const action = { ...base, action: "bounded-action" };
    for (let i = 0; i < MAX_OVERRIDES_PER_ACTION; i++) {
      await callJson("POST", PATH, 201, { key: "devFlood", json: { ...action, bucket_key: `b-${i}`, capacity: 1, rate: "60s" } });
    }
    await callError(
      "POST",
      PATH,
      400,
      215,
      { key: "devFlood", json: { ...action, bucket_key: "one-more", capacity: 1, rate: "60s" } },
      /at most 100 overrides/,
    );
  });
});

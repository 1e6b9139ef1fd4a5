import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { newId } from "../../../src/ids.ts";
import { LIST_BOT_USERS_SQL } from "../../../src/management/store/bot-users.ts";
import { type BotUser, type BotUserList, ORIGIN, call, callError, callJson, createBotUser } from "./helpers.ts";
import type { TestKeyName } from "./keys.ts";

/** Pages through /bot_users following next_page_uri; returns the pages. */
async function allPages(first: string, key: TestKeyName = "dev"): Promise<BotUserList[]> {
  const pages: BotUserList[] = [];
  let next: string | null = first;
  while (next !== null) {
    const page: BotUserList = await callJson<BotUserList>("GET", next, 200, { key });
    pages.push(page);
    next = page.next_page_uri;
  }
  return pages;
}

describe("listing bot users", () => {
  // The other account keeps its own list: these tests own acct_other's store in this file.
  const key: TestKeyName = "other";
  let created: BotUser[] = [];

  it("an empty account lists no bot users, with next_page_uri null", async () => {
    expect(await callJson<BotUserList>("GET", "/bot_users", 200, { key })).toEqual({ bot_users: [], uri: `${ORIGIN}/bot_users`, next_page_uri: null });
  });

  it("lists newest first, 100 per page by default", async () => {
    created = [];
    for (let i = 0; i < 7; i++) created.push(await createBotUser(`user-${i}`, key));
    const list = await callJson<BotUserList>("GET", "/bot_users", 200, { key });
    expect(list.bot_users).toEqual([...created].reverse());
    expect(list.uri).toBe(`${ORIGIN}/bot_users`);
    expect(list.next_page_uri).toBeNull();
  });

  it("pages with limit and before_id; next_page_uri is absolute and carries both; the last page has null", async () => {
    const newestFirst = [...created].reverse().map((user) => user.id);
    const pages = await allPages("/bot_users?limit=3", key);
    expect(pages.map((page) => page.bot_users.map((user) => user.id))).toEqual([newestFirst.slice(0, 3), newestFirst.slice(3, 6), newestFirst.slice(6)]);
    expect(pages[0].next_page_uri).toBe(`${ORIGIN}/bot_users?before_id=${newestFirst[2]}&limit=3`);
    expect(pages[1].next_page_uri).toBe(`${ORIGIN}/bot_users?before_id=${newestFirst[5]}&limit=3`);
    expect(pages[2].next_page_uri).toBeNull();
  });

  it("a page that ends exactly at the last item has next_page_uri null", async () => {
    const pages = await allPages("/bot_users?limit=7", key);
    expect(pages).toHaveLength(1);
    expect(pages[0].bot_users).toHaveLength(7);
  });

  it("beforeId is an alias of before_id; both equal is fine", async () => {
    const newestFirst = [...created].reverse().map((user) => user.id);
    const snake = await callJson<BotUserList>("GET", `/bot_users?before_id=${newestFirst[1]}&limit=2`, 200, { key });
    const camel = await callJson<BotUserList>("GET", `/bot_users?beforeId=${newestFirst[1]}&limit=2`, 200, { key });
    const both = await callJson<BotUserList>("GET", `/bot_users?beforeId=${newestFirst[1]}&before_id=${newestFirst[1]}&limit=2`, 200, { key });
    expect(snake.bot_users.map((user) => user.id)).toEqual(newestFirst.slice(2, 4));
    expect(camel).toEqual(snake);
    expect(both).toEqual(snake);
  });

  it("deleting items between pages neither repeats nor skips the remaining ones", async () => {
    const newestFirst = [...created].reverse().map((user) => user.id);
    const first = await callJson<BotUserList>("GET", "/bot_users?limit=3", 200, { key });
    expect(first.bot_users.map((user) => user.id)).toEqual(newestFirst.slice(0, 3));
    // Delete the last item of the page (the cursor itself) and the first item of the next page.
    for (const id of [newestFirst[2], newestFirst[3]]) expect((await call("DELETE", `/bot_users/${id}`, { key })).status).toBe(204);
    const rest = await allPages(first.next_page_uri!, key);
    expect(rest.flatMap((page) => page.bot_users.map((user) => user.id))).toEqual(newestFirst.slice(4));
    // A bot user created meanwhile is newer than the cursor, so it shows on a fresh first page, not on later ones.
    const late = await createBotUser("late", key);
    expect((await callJson<BotUserList>("GET", "/bot_users?limit=1", 200, { key })).bot_users[0].id).toBe(late.id);
  });

  describe("limit", () => {
    for (const limit of ["0", "101", "-1", "1.5", "abc", "", "1000000000000000000000"]) {
      it(`limit=${limit} → 400 ERR_SVC_233`, async () => {
        const envelope = await callError("GET", `/bot_users?limit=${limit}`, 400, 233, { key }, "The field 'limit' must be an integer from 1 to 100.");
        expect(envelope.details).toMatchObject({ field: "limit", min: 1, max: 100 });
      });
    }

    it("limit=1 and limit=100 are accepted", async () => {
      expect((await callJson<BotUserList>("GET", "/bot_users?limit=1", 200, { key })).bot_users).toHaveLength(1);
      expect((await callJson<BotUserList>("GET", "/bot_users?limit=100", 200, { key })).next_page_uri).toBeNull();
    });
  });

  describe("before_id", () => {
    it("an id of another resource or garbage → 400 ERR_SVC_215 naming before_id", async () => {
      for (const query of ["before_id=tn_0ERbD4CoWXJxTYICGPe8UcyAzR6", "before_id=zzz", "beforeId=bot_short"]) {
        const envelope = await callError("GET", `/bot_users?${query}`, 400, 215, { key });
        expect(envelope.details.field).toBe("before_id");
      }
    });

    it("before_id and beforeId that disagree → 400 ERR_SVC_215", async () => {
      const a = newId("bot");
      const b = newId("bot");
      await callError("GET", `/bot_users?before_id=${a}&beforeId=${b}`, 400, 215, { key }, /disagree/);
    });

    it("a before_id older than every item lists nothing", async () => {
      const oldest = `bot_${"0".repeat(26)}1`;
      expect(await callJson<BotUserList>("GET", `/bot_users?before_id=${oldest}`, 200, { key })).toEqual({
        bot_users: [],
        uri: `${ORIGIN}/bot_users`,
        next_page_uri: null,
      });
    });
  });
});

describe("10,000 bot users", () => {
  const TOTAL = 10_000;
  const stub = () => env.ACCOUNT_STORE.getByName("acct_dev");

  it("page in constant time: every page of 100 reads at most 101 rows through the primary key", async () => {
    await runInDurableObject(stub(), (_instance, state) => {
      state.storage.transactionSync(() => {
        const createdAt = new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
        for (let i = 0; i < TOTAL; i++) {
          state.storage.sql.exec("INSERT INTO bot_users (id, name, active, created_at) VALUES (?, ?, 1, ?)", newId("bot"), `bulk-${i}`, createdAt);
        }
      });
    });

    // The whole list through the API (the ngrok client's way: limit plus the last id as beforeId).
    const seen: string[] = [];
    let next: string | null = "/bot_users?limit=100";
    let pages = 0;
    while (next !== null) {
      const page: BotUserList = await callJson<BotUserList>("GET", next, 200, { key: "devPaging" });
      seen.push(...page.bot_users.map((user) => user.id));
      next = page.next_page_uri;
      pages++;
    }
    expect(pages).toBe(TOTAL / 100);
    expect(seen).toHaveLength(TOTAL);
    expect(new Set(seen).size).toBe(TOTAL);
    expect([...seen].sort().reverse()).toEqual(seen);

    // The cost of a page does not depend on where it is: first, middle and last pages read ≤ limit + 1 rows.
    await runInDurableObject(stub(), (instance) => {
      for (const beforeId of [undefined, seen[4_999], seen[TOTAL - 51]]) {
        const page = instance.listBotUsers({ limit: 100, beforeId });
        expect(page.rowsRead).toBeLessThanOrEqual(101);
        expect(page.items.length).toBeGreaterThan(0);
      }
    });

    // And the query plan seeks the primary key in order rather than scanning or sorting.
    const plan = await runInDurableObject(stub(), (_instance, state) =>
      state.storage.sql
        .exec<{ detail: string }>(`EXPLAIN QUERY PLAN ${LIST_BOT_USERS_SQL}`, seen[5_000], 101)
        .toArray()
        .map((row) => row.detail),
    );
    expect(plan.join("; ")).toMatch(/SEARCH bot_users USING PRIMARY KEY \(id<\?\)/);
    expect(plan.join("; ")).not.toMatch(/TEMP B-TREE|SCAN/);
  });
});

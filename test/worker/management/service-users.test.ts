/**
 * Service users on both of their paths: every behaviour runs against `/service_users` (ngrok's current name)
 * and `/bot_users` (its former one), and the two serve one store.
 */

import { abortAllDurableObjects, env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { MIGRATIONS, migrate } from "../../../src/management/store/migrations.ts";
import {
  type BotUser,
  type CallOptions,
  ORIGIN,
  RFC3339_UTC,
  type UsersPath,
  call as send,
  callError as sendExpectingError,
  callJson as sendExpectingJson,
  createUser,
} from "./helpers.ts";
import type { TestKeyName } from "./keys.ts";

const UNKNOWN_ID = "bot_0ERbD4CoWXJxTYICGPe8UcyAzR6";
const NOT_WELL_FORMED = "The field 'name' must be well-formed Unicode text (it contains an unpaired surrogate such as \\ud800).";

type UserList = Record<string, BotUser[]> & { uri: string; next_page_uri: string | null };

/**
 * The helpers with another default key: each path's run of the shared tests counts in its own bucket of the
 * management policy's per-key limit (120 a minute), which both runs together would pass.
 */
function callsAs(defaultKey: TestKeyName) {
  const withKey = (options: CallOptions): CallOptions => ({ key: defaultKey, ...options });
  return {
    key: defaultKey,
    call: (method: string, path: string, options: CallOptions = {}) => send(method, path, withKey(options)),
    callJson: <T = Record<string, unknown>>(method: string, path: string, status: number, options: CallOptions = {}) =>
      sendExpectingJson<T>(method, path, status, withKey(options)),
    callError: (method: string, path: string, status: number, code: number, options: CallOptions = {}, msg?: RegExp | string) =>
      sendExpectingError(method, path, status, code, withKey(options), msg),
  };
}

const { call, callJson, callError } = callsAs("dev");

describe.each<[UsersPath, string, TestKeyName]>([
  ["/service_users", "service_users", "devServiceUsers"],
  ["/bot_users", "bot_users", "dev"],
])("%s", (path, listKey, defaultKey) => {
  const { call, callJson, callError, key } = callsAs(defaultKey);
  const create = (name: string, as: TestKeyName = key, active?: boolean) => createUser(path, name, as, active);

  describe("create", () => {
    it(`POST ${path} → 201 with id, absolute uri, name, active (default true) and an RFC 3339 created_at`, async () => {
      const before = Date.now();
      const created = await create("ci-bot");
      expect(created.id).toMatch(/^bot_[0-9A-Za-z]{27}$/);
      expect(created.uri).toBe(`${ORIGIN}${path}/${created.id}`);
      expect(created).toMatchObject({ name: "ci-bot", active: true });
      expect(created.created_at).toMatch(RFC3339_UTC);
      const createdAt = Date.parse(created.created_at);
      expect(createdAt).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000);
      expect(createdAt).toBeLessThanOrEqual(Date.now());
      expect(Object.keys(created).sort()).toEqual(["active", "created_at", "id", "name", "uri"]);
    });

    it("active can be set to false on create", async () => {
      expect((await create("idle", "dev", false)).active).toBe(false);
    });

    it("the uri is on the host the request came to", async () => {
      const created = await callJson<BotUser>("POST", `http://localhost${path}`, 201, { json: { name: "via-localhost" } });
      expect(created.uri).toBe(`http://localhost${path}/${created.id}`);
    });

    it("ids made one after another sort by creation time", async () => {
      const a = await create("a");
      const b = await create("b");
      expect(a.id < b.id).toBe(true);
    });

    describe("validation", () => {
      const cases: Array<[string, unknown, number, string, string]> = [
        ["name missing", { active: true }, 215, "name", "The field 'name' is required."],
        ["name null", { name: null }, 215, "name", "The field 'name' must be a string."],
        ["name a number", { name: 7 }, 215, "name", "The field 'name' must be a string."],
        ["name empty", { name: "" }, 215, "name", "The field 'name' must be 1 to 255 characters."],
        ["name 256 characters", { name: "n".repeat(256) }, 215, "name", "The field 'name' must be 1 to 255 characters."],
        ["active a string", { name: "x", active: "yes" }, 215, "active", "The field 'active' must be true or false."],
        ["active null", { name: "x", active: null }, 215, "active", "The field 'active' must be true or false."],
        ["an unknown field", { name: "x", id: "bot_x" }, 214, "id", "The field 'id' is not a known field."],
        ["name with an unpaired high surrogate", { name: "a\ud800b" }, 215, "name", NOT_WELL_FORMED],
        ["name with an unpaired low surrogate", { name: "\udc00" }, 215, "name", NOT_WELL_FORMED],
        ["name with a surrogate pair in the wrong order", { name: "\ude80\ud83d" }, 215, "name", NOT_WELL_FORMED],
        ["name of 255 unpaired surrogates", { name: "\ud800".repeat(255) }, 215, "name", NOT_WELL_FORMED],
        ["name of 256 emoji", { name: "🚀".repeat(256) }, 215, "name", "The field 'name' must be 1 to 255 characters."],
      ];
      for (const [title, body, code, field, msg] of cases) {
        it(`${title} → 400 ERR_SVC_${code} naming '${field}'`, async () => {
          const envelope = await callError("POST", path, 400, code, { json: body });
          expect(envelope.msg).toBe(msg);
          expect(envelope.details.field).toBe(field);
        });
      }

      it("a name of exactly 255 characters is accepted", async () => {
        expect((await create("n".repeat(255))).name).toHaveLength(255);
      });

      it("the length counts code points: 255 four-byte emoji are accepted and come back exactly as sent", async () => {
        const name = "🚀".repeat(255);
        const created = await create(name);
        expect(created.name).toBe(name);
        expect((await callJson<BotUser>("GET", `${path}/${created.id}`, 200)).name).toBe(name);
      });

      it("a name mixing one-, two-, three- and four-byte characters round-trips through storage unchanged", async () => {
        const name = "a é 界 🚀 👩‍💻";
        const created = await create(name);
        expect((await callJson<BotUser>("GET", `${path}/${created.id}`, 200)).name).toBe(name);
      });
    });
  });

  describe("get", () => {
    it(`GET ${path}/{id} → 200, the same representation as on create`, async () => {
      const created = await create("getme");
      expect(await callJson<BotUser>("GET", `${path}/${created.id}`, 200)).toEqual(created);
    });

    it("an unknown or malformed id → 404 ERR_SVC_204", async () => {
      const envelope = await callError("GET", `${path}/${UNKNOWN_ID}`, 404, 204, {}, UNKNOWN_ID);
      expect(envelope.details.id).toBe(UNKNOWN_ID);
      await callError("GET", `${path}/not-an-id`, 404, 204);
      await callError("GET", `${path}/tn_0ERbD4CoWXJxTYICGPe8UcyAzR6`, 404, 204);
    });
  });

  describe("update", () => {
    it("PATCH name, active, or both → 200 with the updated user", async () => {
      const created = await create("before");
      const renamed = await callJson<BotUser>("PATCH", `${path}/${created.id}`, 200, { json: { name: "after" } });
      expect(renamed).toEqual({ ...created, name: "after" });
      const deactivated = await callJson<BotUser>("PATCH", `${path}/${created.id}`, 200, { json: { active: false } });
      expect(deactivated).toEqual({ ...created, name: "after", active: false });
      const both = await callJson<BotUser>("PATCH", `${path}/${created.id}`, 200, { json: { name: "both", active: true } });
      expect(both).toEqual({ ...created, name: "both", active: true });
      expect(await callJson<BotUser>("GET", `${path}/${created.id}`, 200)).toEqual(both);
    });

    it("an empty object changes nothing; the path id repeated in the body is tolerated", async () => {
      const created = await create("same");
      expect(await callJson<BotUser>("PATCH", `${path}/${created.id}`, 200, { json: {} })).toEqual(created);
      expect(await callJson<BotUser>("PATCH", `${path}/${created.id}`, 200, { json: { id: created.id, active: false } })).toEqual({
        ...created,
        active: false,
      });
    });

    it("a different id in the body → 400 ERR_SVC_215 naming 'id'", async () => {
      const created = await create("mismatch");
      const envelope = await callError("PATCH", `${path}/${created.id}`, 400, 215, { json: { id: UNKNOWN_ID, name: "x" } });
      expect(envelope.details.field).toBe("id");
    });

    it("invalid values and unknown fields are refused, naming the field", async () => {
      const created = await create("strict");
      expect((await callError("PATCH", `${path}/${created.id}`, 400, 215, { json: { name: "" } })).details.field).toBe("name");
      expect((await callError("PATCH", `${path}/${created.id}`, 400, 215, { json: { active: 1 } })).details.field).toBe("active");
      expect((await callError("PATCH", `${path}/${created.id}`, 400, 214, { json: { created_at: "x" } })).details.field).toBe("created_at");
      await callError("PATCH", `${path}/${created.id}`, 400, 213, { body: "{", headers: { "content-type": "application/json" } });
    });

    it("a name or id with an unpaired surrogate → 400 ERR_SVC_215 naming the field; the user is unchanged", async () => {
      const created = await create("kept");
      const name = await callError("PATCH", `${path}/${created.id}`, 400, 215, { json: { name: "\udfff" } });
      expect(name.msg).toBe(NOT_WELL_FORMED);
      expect(name.details.field).toBe("name");
      const id = await callError("PATCH", `${path}/${created.id}`, 400, 215, { json: { id: `${created.id}\ud800` } });
      expect(id.msg).toBe(NOT_WELL_FORMED.replace("'name'", "'id'"));
      expect(id.details.field).toBe("id");
      expect(await callJson<BotUser>("GET", `${path}/${created.id}`, 200)).toEqual(created);
    });

    it("an unknown id → 404", async () => {
      await callError("PATCH", `${path}/${UNKNOWN_ID}`, 404, 204, { json: { name: "x" } });
    });
  });

  describe("delete", () => {
    it("DELETE → 204 with no body; afterwards GET, PATCH and DELETE answer 404", async () => {
      const created = await create("doomed");
      const response = await call("DELETE", `${path}/${created.id}`);
      expect(response.status).toBe(204);
      expect(await response.text()).toBe("");
      expect(response.headers.get("x-operation-id")).toMatch(/^op_/);
      await callError("GET", `${path}/${created.id}`, 404, 204);
      await callError("PATCH", `${path}/${created.id}`, 404, 204, { json: { name: "x" } });
      await callError("DELETE", `${path}/${created.id}`, 404, 204);
    });

    it("a JSON body on DELETE is ignored", async () => {
      const created = await create("body-on-delete");
      const response = await call("DELETE", `${path}/${created.id}`, { json: { id: created.id } });
      expect(response.status).toBe(204);
    });
  });

  describe("cross-account isolation", () => {
    it("another account neither lists, reads, changes nor deletes this account's users", async () => {
      const mine = await create("mine");
      const theirs = await create("theirs", "other");
      const otherList = await callJson<UserList>("GET", path, 200, { key: "other" });
      const otherIds = otherList[listKey].map((user) => user.id);
      expect(otherIds[0]).toBe(theirs.id);
      expect(otherIds).not.toContain(mine.id);
      await callError("GET", `${path}/${mine.id}`, 404, 204, { key: "other" });
      await callError("PATCH", `${path}/${mine.id}`, 404, 204, { key: "other", json: { name: "hijacked" } });
      await callError("DELETE", `${path}/${mine.id}`, 404, 204, { key: "other" });
      expect(await callJson<BotUser>("GET", `${path}/${mine.id}`, 200)).toEqual(mine);
      const myList = await callJson<UserList>("GET", path, 200);
      expect(myList[listKey].map((user) => user.id)).not.toContain(theirs.id);
      await callError("GET", `${path}/${theirs.id}`, 404, 204, { key });
    });
  });
});

describe("one store, two paths", () => {
  it("a user created on either path is read, listed, changed and deleted on the other", async () => {
    const viaService = await createUser("/service_users", "made-as-service");
    const viaBot = await createUser("/bot_users", "made-as-bot");
    expect(await callJson<BotUser>("GET", `/bot_users/${viaService.id}`, 200)).toEqual({ ...viaService, uri: `${ORIGIN}/bot_users/${viaService.id}` });
    expect(await callJson<BotUser>("GET", `/service_users/${viaBot.id}`, 200)).toEqual({ ...viaBot, uri: `${ORIGIN}/service_users/${viaBot.id}` });
    const services = await callJson<UserList>("GET", "/service_users", 200);
    const bots = await callJson<UserList>("GET", "/bot_users", 200);
    expect(services.service_users.map((user) => user.id)).toEqual(bots.bot_users.map((user) => user.id));
    expect(services.service_users.map((user) => user.id).slice(0, 2)).toEqual([viaBot.id, viaService.id]);
    expect(services.uri).toBe(`${ORIGIN}/service_users`);
    await callJson("PATCH", `/service_users/${viaBot.id}`, 200, { json: { name: "renamed-as-service" } });
    expect((await callJson<BotUser>("GET", `/bot_users/${viaBot.id}`, 200)).name).toBe("renamed-as-service");
    expect((await call("DELETE", `/bot_users/${viaService.id}`)).status).toBe(204);
    await callError("GET", `/service_users/${viaService.id}`, 404, 204, {}, `No service user '${viaService.id}' exists in this account.`);
  });
});

describe("persistence", () => {
  it("service users survive a restart of the account's Durable Object", async () => {
    const created = await createUser("/service_users", "durable");
    await abortAllDurableObjects();
    expect(await callJson<BotUser>("GET", `/service_users/${created.id}`, 200)).toEqual(created);
    const stub = env.ACCOUNT_STORE.getByName("acct_dev");
    const stored = await runInDurableObject(stub, (_instance, state) =>
      state.storage.sql.exec<{ name: string }>("SELECT name FROM bot_users WHERE id = ?", created.id).toArray(),
    );
    expect(stored).toEqual([{ name: "durable" }]);
  });

  it("the schema is migrated once: every migration is recorded and running them again changes nothing", async () => {
    const stub = env.ACCOUNT_STORE.getByName("acct_dev");
    const versions = await runInDurableObject(stub, (_instance, state) => {
      expect(migrate(state.storage)).toBe(MIGRATIONS.length);
      return state.storage.sql.exec<{ version: number }>("SELECT version FROM schema_migrations ORDER BY version").toArray();
    });
    expect(versions).toEqual(MIGRATIONS.map((_, index) => ({ version: index + 1 })));
  });
});

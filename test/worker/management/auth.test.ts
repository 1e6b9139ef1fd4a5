import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { authenticateApiKey, credentialIdOf, hashApiKey, parseApiKeys } from "../../../src/management/auth.ts";
import { DEV_KEY } from "./keys.ts";

const DEV_KEY_HASH = "b49443744293203acda426fbf95f79d9f4e253b5fa2dbe2db60e7ead7f69cf3c";

describe("TOLLGATE_API_KEYS", () => {
  it("the hash committed in .dev.vars is the SHA-256 of the development key", async () => {
    expect(await hashApiKey(DEV_KEY)).toBe(DEV_KEY_HASH);
  });

  it("parses account:hash entries separated by commas, spaces or new lines; upper-case hex is fine", () => {
    const config = parseApiKeys(`acct_dev:${DEV_KEY_HASH},\n acct_ops:${"AB".repeat(32)}  acct_dev:${"0".repeat(64)}`);
    expect(config.ok).toBe(true);
    if (!config.ok) return;
    expect(config.entries.map((entry) => entry.accountId)).toEqual(["acct_dev", "acct_ops", "acct_dev"]);
    expect([...config.entries[1].hash]).toEqual(new Array(32).fill(0xab));
  });

  it("unset or empty means no key", () => {
    expect(parseApiKeys(undefined)).toEqual({ ok: true, entries: [] });
    expect(parseApiKeys(" , ")).toEqual({ ok: true, entries: [] });
  });

  it("a malformed entry is reported by position, without its hash", () => {
    expect(parseApiKeys(`acct_dev:${DEV_KEY_HASH},dev:${DEV_KEY_HASH}`)).toEqual({
      ok: false,
      problem: "entry 2 must start with an account id 'acct_…' followed by ':'",
    });
    expect(parseApiKeys("acct_dev:abc")).toEqual({ ok: false, problem: "entry 1 (account acct_dev) must end with 64 hex digits, the SHA-256 of the key" });
    expect(parseApiKeys(DEV_KEY_HASH).ok).toBe(false);
  });
});

describe("authenticateApiKey (also used for agent connections)", () => {
  it("a configured key answers its account", async () => {
    expect(await authenticateApiKey(`Bearer ${DEV_KEY}`, env)).toEqual({
      ok: true,
      accountId: "acct_dev",
      credentialId: await credentialIdOf(hexBytes(DEV_KEY_HASH)),
    });
  });

  it("the scheme is accepted in any case; other whitespace than one space is refused", async () => {
    for (const scheme of ["bearer", "BEARER", "bEaReR"]) {
      expect(await authenticateApiKey(`${scheme} ${DEV_KEY}`, env)).toMatchObject({ ok: true, accountId: "acct_dev" });
    }
    for (const header of [`Bearer  ${DEV_KEY}`, `Bearer\t${DEV_KEY}`, ` Bearer ${DEV_KEY}`, `Bearer ${DEV_KEY} `, `Bearer\u00a0${DEV_KEY}`]) {
      const result = await authenticateApiKey(header, env);
      expect(result.ok ? "accepted" : result.error.code).toBe(200);
    }
  });

  it("a key's credential id is cr_ and 27 base62 characters, stable, distinct per key, and not made of the configured hash", async () => {
    const id = await credentialIdOf(hexBytes(DEV_KEY_HASH));
    expect(id).toMatch(/^cr_[0-9A-Za-z]{27}$/);
    expect(await credentialIdOf(hexBytes(DEV_KEY_HASH))).toBe(id);
    expect(await credentialIdOf(hexBytes(await hashApiKey("tgk_another")))).not.toBe(id);
    const hex = id.slice(3).toLowerCase();
    for (let i = 0; i + 8 <= DEV_KEY_HASH.length; i += 8) expect(hex).not.toContain(DEV_KEY_HASH.slice(i, i + 8));
  });

  it("the first account whose hash matches wins when a hash is listed twice", async () => {
    const twice = { ...env, TOLLGATE_API_KEYS: `acct_a:${DEV_KEY_HASH},acct_b:${DEV_KEY_HASH}` };
    expect(await authenticateApiKey(`Bearer ${DEV_KEY}`, twice)).toMatchObject({ ok: true, accountId: "acct_a" });
  });

  it("missing, malformed and unknown credentials are 401s with codes 200, 200 and 203", async () => {
    for (const [header, code] of [
      [null, 200],
      ["", 200],
      ["Token abc", 200],
      [`Bearer ${DEV_KEY} extra`, 200],
      ["Bearer tgk_unknown", 203],
    ] as const) {
      const result = await authenticateApiKey(header, env);
      expect(result.ok).toBe(false);
      if (result.ok) continue;
      expect([result.error.status, result.error.code]).toEqual([401, code]);
      expect(result.error.headers["www-authenticate"]).toBe('Bearer realm="tollgate"');
    }
  });

  it("with no keys configured every key is refused", async () => {
    const result = await authenticateApiKey(`Bearer ${DEV_KEY}`, { ...env, TOLLGATE_API_KEYS: "" });
    expect(result.ok ? undefined : result.error.code).toBe(203);
  });

  it("a malformed configuration is a 500 that names the variable, never the presented key", async () => {
    const result = await authenticateApiKey("Bearer tgk_secret_value", { ...env, TOLLGATE_API_KEYS: "nonsense" });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error.status).toBe(500);
    expect(result.error.message).toMatch(/TOLLGATE_API_KEYS/);
    expect(result.error.message).not.toMatch(/tgk_secret_value/);
  });
});

function hexBytes(hex: string): Uint8Array {
  return Uint8Array.from(hex.match(/../g)!, (pair) => Number.parseInt(pair, 16));
}

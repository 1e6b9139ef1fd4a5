import { describe, expect, it } from "vitest";
import { MAX_API_KEYS, parseSettings, type Settings, SettingsError, settingsOf } from "../../src/settings.ts";

const HASH = "ab".repeat(32);

/** wrangler.toml's [vars] as a fresh checkout has them, plus one key. */
const committed = {
  INGRESS_ID: "",
  TOLLGATE_EDGE_ACCOUNT: "acct_dev",
  TUNNEL_DOMAIN: "localhost",
  RATE_LIMIT_TIMEOUT_MS: "",
  UPSTREAM_TIMEOUT_MS: "",
  TUNNEL_HEARTBEAT_MS: "",
  TUNNEL_BODY_CHANNEL_WAIT_MS: "",
  TOLLGATE_DEBUG_STATS: "",
  TOLLGATE_API_KEYS: `acct_dev:${HASH}`,
};

function settings(overrides: Record<string, unknown>): Settings {
  const parsed = parseSettings({ ...committed, ...overrides });
  if (parsed instanceof SettingsError) throw parsed;
  return parsed;
}

function problem(overrides: Record<string, unknown>): string {
  const parsed = parseSettings({ ...committed, ...overrides });
  return parsed instanceof SettingsError ? parsed.message : "loaded";
}

describe("settings from the environment", () => {
  it("empty variables take the defaults wrangler.toml documents", () => {
    expect(settings({})).toEqual({
      ingressId: "",
      tunnelDomain: "localhost",
      edgeAccount: "acct_dev",
      rateLimitTimeoutMs: 1000,
      upstreamTimeoutMs: 30_000,
      heartbeatMs: 5000,
      bodyChannelWaitMs: 30_000,
      debugStats: false,
      apiKeys: [{ accountId: "acct_dev", hash: new Uint8Array(32).fill(0xab) }],
    });
  });

  it("absent variables (a deployment that leaves one out) take the defaults too", () => {
    expect(parseSettings({})).toMatchObject({ tunnelDomain: "", edgeAccount: "acct_dev", rateLimitTimeoutMs: 1000, apiKeys: [] });
  });

  it("set values are read: numbers, a normalized domain, the flag", () => {
    expect(
      settings({
        INGRESS_ID: "fra-1",
        TUNNEL_DOMAIN: " Tunnels.Example.COM. ",
        TOLLGATE_EDGE_ACCOUNT: " acct_ops ",
        RATE_LIMIT_TIMEOUT_MS: "50",
        UPSTREAM_TIMEOUT_MS: "100",
        TUNNEL_HEARTBEAT_MS: "200",
        TUNNEL_BODY_CHANNEL_WAIT_MS: "3000",
        TOLLGATE_DEBUG_STATS: "1",
      }),
    ).toMatchObject({
      ingressId: "fra-1",
      tunnelDomain: "tunnels.example.com",
      edgeAccount: "acct_ops",
      rateLimitTimeoutMs: 50,
      upstreamTimeoutMs: 100,
      heartbeatMs: 200,
      bodyChannelWaitMs: 3000,
      debugStats: true,
    });
  });

  it("a typo in a duration names the variable and shows the value", () => {
    expect(problem({ RATE_LIMIT_TIMEOUT_MS: "1o00" })).toBe(
      `The gateway's settings do not load: RATE_LIMIT_TIMEOUT_MS: expected a positive integer of milliseconds, got "1o00"`,
    );
  });

  it.each([
    ["RATE_LIMIT_TIMEOUT_MS", "0", `expected a positive integer of milliseconds, got "0"`],
    ["RATE_LIMIT_TIMEOUT_MS", "-5", `expected a positive integer of milliseconds, got "-5"`],
    ["RATE_LIMIT_TIMEOUT_MS", "1e3", `expected a positive integer of milliseconds, got "1e3"`],
    ["RATE_LIMIT_TIMEOUT_MS", "12.5", `expected a positive integer of milliseconds, got "12.5"`],
    ["UPSTREAM_TIMEOUT_MS", "Infinity", `expected a positive integer of milliseconds, got "Infinity"`],
    ["UPSTREAM_TIMEOUT_MS", "9".repeat(60), `expected a positive integer of milliseconds, got "${"9".repeat(40)}…"`],
    ["UPSTREAM_TIMEOUT_MS", "600001", `expected at most 600000 milliseconds, got "600001"`],
    ["TUNNEL_HEARTBEAT_MS", "199", `expected an integer of milliseconds of at least 200, got "199"`],
    ["TUNNEL_BODY_CHANNEL_WAIT_MS", "3 s", `expected a positive integer of milliseconds, got "3 s"`],
    ["TOLLGATE_DEBUG_STATS", "yes", `expected "1" (on), "0" or empty (off), got "yes"`],
    ["INGRESS_ID", "a b", `expected at most 64 of A-Z a-z 0-9 . _ -, got "a b"`],
    ["INGRESS_ID", "x".repeat(65), `expected at most 64 of A-Z a-z 0-9 . _ -, got "${"x".repeat(40)}…"`],
    ["TUNNEL_DOMAIN", "exa mple.com", `expected a DNS name (labels of a-z 0-9 -, at most 253 characters), got "exa mple.com"`],
    ["TUNNEL_DOMAIN", `${"a".repeat(63)}.`.repeat(4), `expected a DNS name (labels of a-z 0-9 -, at most 253 characters), got "${"a".repeat(40)}…"`],
    ["TOLLGATE_EDGE_ACCOUNT", "ops", `expected an account id 'acct_…', got "ops"`],
    ["TOLLGATE_API_KEYS", "acct_dev:abc", "entry 1 (account acct_dev) must end with 64 hex digits, the SHA-256 of the key"],
    ["RATE_LIMIT_TIMEOUT_MS", 1000, "expected a string, got number"],
  ])("%s = %j is refused: %s", (name, value, message) => {
    expect(problem({ [name]: value })).toBe(`The gateway's settings do not load: ${name}: ${message}`);
  });

  it("more keys than MAX_API_KEYS are refused, counted", () => {
    const keys = Array.from({ length: MAX_API_KEYS + 1 }, () => `acct_dev:${HASH}`).join(",");
    expect(problem({ TOLLGATE_API_KEYS: keys })).toBe(
      `The gateway's settings do not load: TOLLGATE_API_KEYS: expected at most ${MAX_API_KEYS} keys, got ${MAX_API_KEYS + 1}`,
    );
  });

  it("every bad variable is named, not just the first", () => {
    const parsed = parseSettings({ ...committed, RATE_LIMIT_TIMEOUT_MS: "soon", TOLLGATE_DEBUG_STATS: "on" });
    expect(parsed instanceof SettingsError && parsed.issues).toEqual([
      `RATE_LIMIT_TIMEOUT_MS: expected a positive integer of milliseconds, got "soon"`,
      `TOLLGATE_DEBUG_STATS: expected "1" (on), "0" or empty (off), got "on"`,
    ]);
  });

  it("an env object is parsed once; another object is parsed on its own", () => {
    const env = { ...committed };
    const first = settingsOf(env);
    expect(settingsOf(env)).toBe(first);
    const bad = { ...committed, RATE_LIMIT_TIMEOUT_MS: "1o00" };
    expect(() => settingsOf(bad)).toThrow(SettingsError);
    expect(() => settingsOf(bad)).toThrow(/RATE_LIMIT_TIMEOUT_MS: expected a positive integer/);
  });
});

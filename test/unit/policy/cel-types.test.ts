/** Expressions are type-checked at load: a type error in any variable family is a load error saying which types met. */

import { describe, expect, it } from "vitest";
import { compileExpression, compileValueExpression } from "../../../src/policy/cel.ts";
import type { Phase } from "../../../src/policy/exchange.ts";

function compileError(source: string, phase: Phase = "inbound"): string | undefined {
  const compiled = compileExpression(source, phase);
  return compiled.ok ? undefined : compiled.message;
}

describe("type errors are load errors, for every variable family", () => {
  it.each([
    ["res.status_code < '200'", "outbound", "invalid CEL: '<' does not take (int, string)"],
    ["res.status_code == '200'", "outbound", "invalid CEL: '==' compares int with string: never equal"],
    ["res.headers['server'] == 'x'", "outbound", "invalid CEL: '==' compares list(string) with string: never equal"],
    ["req.method > 3", "inbound", "invalid CEL: '>' does not take (string, int)"],
    ["req.url > 3", "inbound", "invalid CEL: '>' does not take (string, int)"],
    ["req.url.path.startsWith(1)", "inbound", "invalid CEL: no overload of method 'startsWith' of string takes (int)"],
    ["req.url.port == 'x'", "inbound", "invalid CEL: '==' compares int with string: never equal"],
    ["req.url.query_params['a'] == 'b'", "inbound", "invalid CEL: '==' compares list(string) with string: never equal"],
    ["req.headers[0] == ['a']", "inbound", "invalid CEL: a map(string, list(string)) is indexed by string, not int"],
    ["req.content_length == 'big'", "inbound", "invalid CEL: '==' compares int with string: never equal"],
    ["req.user_agent.is_bot == 'yes'", "inbound", "invalid CEL: '==' compares bool with string: never equal"],
    ["req.user_agent + 1 == ''", "inbound", "invalid CEL: '+' does not take (string, int)"],
    ["conn.client_ip > 1", "inbound", "invalid CEL: '>' does not take (string, int)"],
    ["conn.geo.country_code == 1", "inbound", "invalid CEL: '==' compares string with int: never equal"],
    ["conn.client_ip.geo.location.is_eu == 'true'", "inbound", "invalid CEL: '==' compares bool with string: never equal"],
    ["conn.client_ip.as.number == 'AS13335'", "inbound", "invalid CEL: '==' compares int with string: never equal"],
    ["conn.tls.version >= 1.2", "inbound", "invalid CEL: '>=' does not take (string, double)"],
    ["endpoint.port == '443'", "inbound", "invalid CEL: '==' compares int with string: never equal"],
    ["time.now > 0", "inbound", "invalid CEL: '>' does not take (string, int)"],
    ["actions.svc.rate_limit.limited == 'true'", "inbound", "invalid CEL: '==' compares bool with string: never equal"],
    ["actions.ngrok.restrict_ips.matched_cidr && true", "inbound", "invalid CEL: '&&' takes bool operands, not string"],
    ["req.cookies['a'][0].value == 1", "inbound", "invalid CEL: '==' compares string with int: never equal"],
    ["rand.double() == 'half'", "inbound", "invalid CEL: '==' compares double with string: never equal"],
    ["vars[1] == 'x'", "inbound", "invalid CEL: a map(string, dyn) is indexed by string, not int"],
    ["req.method.exists(c, c == 'G')", "inbound", "invalid CEL: cannot iterate over string: comprehensions take a list or a map"],
    ["req.method ? true : false", "inbound", "invalid CEL: the condition of '?:' takes bool operands, not string"],
    ["req.url.path", "inbound", "invalid CEL: an entry expression must be a bool, and this one is string"],
  ] as const)("%s (%s): %s", (source, phase, message) => {
    expect(compileError(source, phase)).toBe(message);
  });

  it("unknown fields of each family are named with their parent", () => {
    expect(compileError("req.url.pathname == '/'")).toBe("invalid CEL: unknown field 'pathname' of req.url");
    expect(compileError("req.user_agent.browser == ''")).toBe("invalid CEL: unknown field 'browser' of req.user_agent");
    expect(compileError("conn.geo.town == ''")).toBe("invalid CEL: unknown field 'town' of conn.geo");
    expect(compileError("conn.client_ip.geo.location.town == ''")).toBe("invalid CEL: unknown field 'town' of conn.client_ip.geo.location");
    expect(compileError("endpoint.name == ''")).toBe("invalid CEL: unknown field 'name' of endpoint");
    expect(compileError("time.today == ''")).toBe("invalid CEL: unknown field 'today' of time");
    expect(compileError("actions.svc.restrict_ips.cidr == ''")).toBe("invalid CEL: unknown field 'cidr' of actions.svc.restrict_ips");
  });

  it("what only the request can tell is left to request time: dyn values, absent keys", () => {
    expect(compileError("vars.tier == 'gold'")).toBeUndefined();
    expect(compileError("vars['count'] > 3")).toBeUndefined();
    expect(compileError("req.headers['x-absent'][0] == 'y'")).toBeUndefined();
    expect(compileError("[1, 'a'][0] == 1")).toBeUndefined();
    expect(compileError("res.status_code == 200.0 && res.status_code < 300u", "outbound")).toBeUndefined();
  });

  it("the library's typed functions keep their types: split, timestamps, sizes", () => {
    expect(compileError("req.url.path.split('/').size() > 2")).toBeUndefined();
    expect(compileError("timestamp(time.now) > timestamp('2024-01-01T00:00:00Z')")).toBeUndefined();
    expect(compileError("double(conn.geo.latitude) >= 45.0")).toBeUndefined();
    expect(compileError("size(req.url.query_params) < 3 && int(req.content_length) > 0")).toBeUndefined();
    expect(compileError("timestamp(time.now) > 3")).toBe("invalid CEL: '>' does not take (timestamp, int)");
  });

  it("value expressions (interpolation, set-vars) may be of any type, and are checked all the same", () => {
    expect(compileValueExpression("req.url.path", "inbound").ok).toBe(true);
    expect(compileValueExpression("size(req.url) + 'x'", "inbound")).toEqual({ ok: false, message: "invalid CEL: '+' does not take (int, string)" });
  });
});

describe("variables Workers cannot provide are refused at load, saying why", () => {
  it.each([
    ["'proxy.anonymous.tor' in conn.client_ip.categories", "IP reputation categories"],
    ["conn.client_ip.is_on_blocklist", "blocklists"],
    ["conn.client_ip.geo.registered_location.country_code == 'US'", "where it is registered"],
    ["conn.geo.radius <= '5'", "accuracy radius"],
    ["conn.tls.ja4_fingerprint == 't13d'", "Bot Management"],
    ["conn.tls.sni == 'a.test'", "SNI"],
    ["conn.client_port == 80", "port"],
    ["conn.bytes_in > 1000", "byte counts"],
    ["req.trailers['x'] == ['y']", "trailers"],
  ])("%s", (source, why) => {
    const message = compileError(source);
    expect(message).toContain("is not available on Workers");
    expect(message).toContain(why);
  });
});

/**
 * `conn.*`: the client address, and what Cloudflare tells of the connection in `request.cf` — geolocation
 * (`conn.geo.*`, and ngrok's IP-intelligence names `conn.client_ip.geo.location.*`, `conn.client_ip.as.*`)
 * and TLS (`conn.tls.*`). Those are hidden variables (`@conn.geo`, `@conn.tls`, `@conn.client_ip`; see
 * rewrite.ts), so `request.cf` is read only by a request whose policy reads them. A field Cloudflare does not
 * give (local development, an address it cannot place, plain HTTP) reads as '' (false for is_eu), never an error.
 */

import { BOOL, INT, record, refused, STRING, type Type } from "../cel-types.ts";
import type { ConnectionFacts, Exchange } from "../exchange.ts";
import { orEmpty, type VariableFamily } from "./family.ts";

const NOT_ON_WORKERS = "is not available on Workers";

const GEO = record("conn.geo", {
  city: STRING,
  country: STRING,
  country_code: STRING,
  latitude: STRING,
  longitude: STRING,
  radius: refused(`conn.geo.radius ${NOT_ON_WORKERS}: Cloudflare gives no accuracy radius with its location`),
  subdivision: STRING,
});

const LOCATION = record("conn.client_ip.geo.location", {
  city: STRING,
  continent: STRING,
  country: STRING,
  country_code: STRING,
  is_eu: BOOL,
  latitude: STRING,
  longitude: STRING,
  metro_code: STRING,
  postal_code: STRING,
  radius: refused(`conn.client_ip.geo.location.radius ${NOT_ON_WORKERS}: Cloudflare gives no accuracy radius with its location`),
  subdivision: STRING,
  timezone: STRING,
});

const CLIENT_IP = record("conn.client_ip", {
  geo: record("conn.client_ip.geo", {
    location: LOCATION,
    registered_location: refused(
      `conn.client_ip.geo.registered_location ${NOT_ON_WORKERS}: Cloudflare locates where an address is used, not where it is registered`,
    ),
  }),
  as: record("conn.client_ip.as", { number: INT, organization: STRING }),
  categories: refused(
    `conn.client_ip.categories ${NOT_ON_WORKERS}: IP reputation categories (tor, proxies, blocklists) are ngrok's own data, and Workers has no source for them`,
  ),
  is_on_blocklist: refused(`conn.client_ip.is_on_blocklist ${NOT_ON_WORKERS}: ngrok's blocklists are ngrok's own data`),
});

const TLS = record("conn.tls", {
  cipher_suite: STRING,
  version: STRING,
  ja4_fingerprint: refused(`conn.tls.ja4_fingerprint ${NOT_ON_WORKERS} to Tollgate: Cloudflare gives JA4 only with Bot Management (Enterprise)`),
  negotiated_alpn: refused(`conn.tls.negotiated_alpn ${NOT_ON_WORKERS}: Cloudflare does not pass the negotiated ALPN protocol to a Worker`),
  session_resumed: refused(`conn.tls.session_resumed ${NOT_ON_WORKERS}: Cloudflare does not tell a Worker whether the session was resumed`),
  sni: refused(`conn.tls.sni ${NOT_ON_WORKERS}: Cloudflare does not pass the SNI to a Worker (req.host is the host asked for)`),
  client: refused(`conn.tls.client ${NOT_ON_WORKERS}: Tollgate does not configure mutual TLS`),
});

const unavailable = (name: string, why: string): Type => refused(`${name} ${NOT_ON_WORKERS}: ${why}`);

export const CONN = record("conn", {
  client_ip: STRING,
  geo: GEO,
  tls: TLS,
  client_port: unavailable("conn.client_port", "a Worker sees the client's address, not its port"),
  server_ip: unavailable("conn.server_ip", "a Worker does not see the address the connection reached"),
  server_port: unavailable("conn.server_port", "a Worker does not see the port the connection reached"),
  bytes_in: unavailable("conn.bytes_in", "a Worker sees requests, not the connection's byte counts"),
  bytes_out: unavailable("conn.bytes_out", "a Worker sees requests, not the connection's byte counts"),
  ts: unavailable("conn.ts", "a Worker sees requests, not when their connection started"),
});

function facts(exchange: Exchange): ConnectionFacts {
  return exchange.connection?.() ?? {};
}

function geo(cf: ConnectionFacts): Map<string, unknown> {
  return new Map<string, unknown>([
    ["city", orEmpty(cf.city)],
    // Cloudflare gives the ISO code only; ngrok's `country` (the English name) is given the same code.
    ["country", orEmpty(cf.country)],
    ["country_code", orEmpty(cf.country)],
    ["latitude", orEmpty(cf.latitude)],
    ["longitude", orEmpty(cf.longitude)],
    ["subdivision", orEmpty(cf.region)],
  ]);
}

function clientIp(cf: ConnectionFacts): Map<string, unknown> {
  const location = geo(cf);
  location.set("continent", orEmpty(cf.continent));
  location.set("is_eu", cf.isEUCountry === "1");
  location.set("metro_code", orEmpty(cf.metroCode));
  location.set("postal_code", orEmpty(cf.postalCode));
  location.set("timezone", orEmpty(cf.timezone));
  const as = new Map<string, unknown>([
    ["number", BigInt(typeof cf.asn === "number" && Number.isSafeInteger(cf.asn) ? cf.asn : 0)],
    ["organization", orEmpty(cf.asOrganization)],
  ]);
  return new Map<string, unknown>([
    ["geo", new Map([["location", location]])],
    ["as", as],
  ]);
}

/** Cloudflare's "TLSv1.3" as ngrok writes it, "1.3". */
function tlsVersion(version: unknown): string {
  return orEmpty(version).replace(/^TLSv/, "");
}

export const connectionVariables: VariableFamily = {
  types: { conn: CONN, "@conn.geo": GEO, "@conn.tls": TLS, "@conn.client_ip": CLIENT_IP },
  readers: {
    conn: (exchange) => new Map([["client_ip", exchange.clientIp]]),
    "@conn.geo": (exchange) => geo(facts(exchange)),
    "@conn.client_ip": (exchange) => clientIp(facts(exchange)),
    "@conn.tls": (exchange) => {
      const cf = facts(exchange);
      return new Map([
        ["cipher_suite", orEmpty(cf.tlsCipher)],
        ["version", tlsVersion(cf.tlsVersion)],
      ]);
    },
  },
};

/**
 * ngrok's documented traffic-policy examples (test/fixtures/ngrok-examples/, one per behaviour, each naming its
 * source in ngrok/ngrok-docs) through the real compiler, both as a tenant sends one with a tunnel and as an
 * operator commits one: each loads, or is refused with a located message that says why. docs/ngrok-examples.md
 * lists them; test/worker/gateway/ngrok-examples*.test.ts show what the ones that load do.
 */

import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { compilePolicy, loadPolicy } from "../../../src/policy/compile.ts";
import { formatIssue } from "../../../src/policy/issues.ts";

const DIRECTORY = "test/fixtures/ngrok-examples";

/** Why a fixture cannot load, as patterns its messages must all match (at least one message each). */
interface Refusal {
  readonly why: string;
  readonly says: readonly RegExp[];
}

const LOADS = "loads";
/** Loads as a tunnel's policy; a route's (a committed file) is refused, as the refusal says. */
interface TenantOnly {
  readonly tenantOnly: Refusal;
}

/** Every fixture, and what it must do at load. A fixture missing here (or an entry without a file) fails. */
const EXPECTED: Readonly<Record<string, typeof LOADS | Refusal | TenantOnly>> = {
  "basic-auth-after-ip-restriction.yaml": LOADS,
  "basic-auth-agent-config.yaml": LOADS,
  "basic-auth-credentials.yaml": LOADS,
  "circuit-breaker-basic.yaml": LOADS,
  "basic-auth-object-credentials.yaml": {
    why: "credentials are username:password strings (ngrok's config reference); this example of its docs writes maps",
    says: [/on_http_request\[0\]\.actions\[0\]\.config\.credentials\[0\]: must be a string/],
  },
  "forward-binding-internal.yaml": LOADS,
  "forward-by-cookie.yaml": LOADS,
  "forward-by-host.yaml": LOADS,
  "forward-by-method.yaml": LOADS,
  "forward-by-path.yaml": LOADS,
  "forward-by-query-param.yaml": LOADS,
  "forward-fallback-redirect.yaml": LOADS,
  "forward-interpolated-url.yaml": {
    why: "forward-internal names one fixed internal endpoint; the target is chosen by entries, not by ${…}",
    says: [/on_http_request\[0\]\.actions\[0\]\.config\.url: .*interpolation in url is not supported/],
  },
  "forward-one-endpoint.yaml": LOADS,
  "forward-random-split.yaml": LOADS,
  "forward-tcp-endpoint.yaml": {
    why: "Cloudflare Workers ingress accepts only HTTP(S)",
    says: [/on_http_request\[0\]\.actions\[0\]\.config\.url: tcp:\/\/ endpoints cannot be served: Cloudflare Workers ingress accepts only HTTP\(S\)/],
  },
  "headers-add-and-remove-request.yaml": LOADS,
  "headers-add-and-remove-response.yaml": LOADS,
  "headers-client-ip.yaml": LOADS,
  "headers-connection-details.yaml": {
    why: "Workers see requests, not when their connection started: there is no conn.ts.start",
    says: [/conn\.ts.*Workers/],
  },
  "headers-country-number-value.yaml": LOADS,
  "headers-path-and-user-agent.yaml": LOADS,
  "headers-remove-request.yaml": LOADS,
  "headers-remove-server.yaml": LOADS,
  "headers-response-interpolation.yaml": {
    why: "Workers see requests, not when their connection started: there is no conn.ts.start",
    says: [/conn\.ts.*Workers/],
  },
  "headers-rewrite-host.yaml": {
    tenantOnly: {
      why: "Workers send a route's upstream the host of its URL: fetch cannot set Host (a tunnel's agent can)",
      says: [/on_http_request\[0\]\.actions\[0\]\.config\.headers\.host: cannot set the Host a route's upstream receives/],
    },
  },
  "ips-allow-and-deny.yaml": LOADS,
  "ips-allow-bare-address.yaml": LOADS,
  "ips-allow-default-enforce.yaml": LOADS,
  "ips-dry-run-log.yaml": LOADS,
  "ips-ngrok-ip-policies.yaml": {
    why: "IP policies are objects of ngrok's API that Tollgate has no store for; allow/deny say the same inline",
    says: [/on_http_request\[0\]\.actions\[0\]\.config\.ip_policies: .*(allow|deny)/],
  },
  "ips-wordpress-admin.yaml": {
    why: "includes() is no CEL function (contains() is), on ngrok as here",
    says: [/on_http_request\[0\]\.expressions\[0\]: .*'includes'/],
  },
  "limits-authorization-tiers.yaml": LOADS,
  "limits-except-crawler-category.yaml": {
    why: "Cloudflare Workers give no IP reputation categories",
    says: [/on_http_request\[0\]\.expressions\[0\]: .*categories.*(Workers|Cloudflare)/],
  },
  "limits-host-ternary-key.yaml": LOADS,
  "limits-per-client-ip.yaml": LOADS,
  "limits-per-host-header.yaml": LOADS,
  "limits-pricing-tiers.yaml": LOADS,
  "limits-specific-endpoint.yaml": LOADS,
  "log-endpoint-id.yaml": LOADS,
  "log-unsuccessful-type-error.yaml": {
    why: "res.status_code is an int compared with the string '200': a type error, which never holds",
    says: [/on_http_response\[0\]\.expressions\[0\]: .*(int|string|overload|type)/i],
  },
  "redirect-api-v1-to-v2.yaml": LOADS,
  "redirect-api-version-regex.yaml": LOADS,
  "redirect-geo-city.yaml": LOADS,
  "redirect-products.yaml": LOADS,
  "refused-actions-not-a-list.yaml": {
    why: "actions written as a map where the schema wants a list of entries (ngrok's too)",
    says: [/on_http_request: must be a list of entries, got a map/],
  },
  "refused-leading-dot-variable.yaml": {
    why: "${.ngrok.geo.country_code} names no variable",
    says: [/on_http_request\[0\]\.actions\[0\]\.config\.headers\.country: .*ngrok/],
  },
  "rewrite-a-b-test.yaml": LOADS,
  "rewrite-blog-permalink.yaml": LOADS,
  "rewrite-products-interpolated.yaml": LOADS,
  "rewrite-products-path.yaml": LOADS,
  "rewrite-products-regex.yaml": LOADS,
  "responses-block-countries.yaml": LOADS,
  "responses-debug-query-param.yaml": LOADS,
  "responses-deny-all.yaml": LOADS,
  "responses-deny-bots-regex.yaml": LOADS,
  "responses-deny-bots.yaml": LOADS,
  "responses-deny-named-bots.yaml": LOADS,
  "responses-deny-non-get.yaml": LOADS,
  "responses-deny-outside-eu.yaml": LOADS,
  "responses-deprecate-version.yaml": LOADS,
  "responses-edge-user-agent-header.yaml": LOADS,
  "responses-edge-user-agent-name.yaml": LOADS,
  "responses-enforce-tls.yaml": LOADS,
  "responses-hello.yaml": LOADS,
  "responses-ip-categories.yaml": {
    why: "Cloudflare Workers give no IP reputation categories",
    says: [/on_http_request\[0\]\.expressions\[0\]: .*categories.*(Workers|Cloudflare)/],
  },
  "responses-json-interpolation.yaml": {
    why: "Workers see requests, not when their connection started: there is no conn.ts.start",
    says: [/conn\.ts.*Workers/],
  },
  "responses-limit-size.yaml": LOADS,
  "responses-maintenance-page.yaml": LOADS,
  "responses-require-api-key.yaml": LOADS,
  "responses-require-authorization.yaml": LOADS,
  "responses-robots-txt.yaml": LOADS,
  "responses-text-multiple-interpolation.yaml": {
    why: "Workers see requests, not when their connection started: there is no conn.ts.start",
    says: [/conn\.ts.*Workers/],
  },
  "vars-every-type.yaml": LOADS,
  "vars-hello-world.yaml": LOADS,
  "vars-interpolated.yaml": LOADS,
  "vars-map-form.yaml": {
    why: "ngrok's set-vars reference wants a list of one-key maps; this example of its docs writes a map",
    says: [/on_http_request\[0\]\.actions\[0\]\.config\.vars: must be a list of one-key maps/],
  },
  "vars-tls-pem-and-request.yaml": {
    why: "`request` is no variable (req is), and Workers give no client certificate as PEM",
    says: [/sample_string: .*'request'/],
  },
  "webhooks-github-not-enforced.yaml": LOADS,
  "webhooks-github.yaml": LOADS,
  "webhooks-gitlab-then-respond.yaml": LOADS,
  "webhooks-n8n-path-and-ips.yaml": LOADS,
  "webhooks-secret-from-vault.yaml": {
    why: "Tollgate has no secrets vault: secrets.get() names nothing",
    says: [/on_http_request\[0\]\.actions\[0\]\.config\.secret: .*secrets/],
  },
  "webhooks-shopify.yaml": LOADS,
  "webhooks-slack.yaml": LOADS,
  "webhooks-stripe.yaml": LOADS,
  "webhooks-twilio.yaml": LOADS,
  "webhooks-unsupported-provider.yaml": {
    why: "Amazon SNS signs with X.509 certificates, not an HMAC; Tollgate verifies the HMAC providers",
    says: [/on_http_request\[0\]\.actions\[0\]\.config\.provider: .*sns.*github/],
  },
};

const fixtures = readdirSync(DIRECTORY)
  .filter((name) => name.endsWith(".yaml"))
  .sort();
const textOf = (name: string) => readFileSync(join(DIRECTORY, name), "utf8");

/** The messages of both load paths: a tunnel's policy (tenant, a parsed value) and a committed file (operator). */
function loadBothWays(name: string): { tenant: string[]; operator: string[] } {
  const text = textOf(name);
  const tenant = compilePolicy(parse(text), { prefix: [], origin: "tenant" });
  const operator = loadPolicy(text, `policies/${name}`);
  return {
    tenant: tenant.ok ? [] : tenant.issues.map(formatIssue),
    operator: operator.ok ? [] : operator.issues.map(formatIssue),
  };
}

describe("ngrok's documented examples", () => {
  it("every fixture is in the table, names its source in ngrok/ngrok-docs and says what ngrok does", () => {
    expect(fixtures).toEqual(Object.keys(EXPECTED).sort());
    for (const name of fixtures) {
      const text = textOf(name);
      expect(text, name).toMatch(/^# source: ngrok\/ngrok-docs@[0-9a-f]{7} \S+\.mdx/);
      expect(text, name).toMatch(/^# ngrok: /m);
    }
  });

  const loading = fixtures.filter((name) => EXPECTED[name] === LOADS);
  it.each(loading)("%s loads as a tenant's policy and as a committed file", (name) => {
    expect(loadBothWays(name)).toEqual({ tenant: [], operator: [] });
  });

  const refused = fixtures.flatMap((name) => {
    const expected = EXPECTED[name];
    return expected === LOADS || expected === undefined || "tenantOnly" in expected ? [] : [{ name, ...expected }];
  });
  it.each(refused)("$name is refused because $why", ({ name, says }) => {
    const { tenant, operator } = loadBothWays(name);
    const located = new RegExp(`^policies/${name.replaceAll(".", "\\.")}:\\d+: `);
    expect(
      operator.filter((message) => !located.test(message)),
      "every message of the committed file has its line",
    ).toEqual([]);
    for (const messages of [tenant, operator]) {
      expect(messages).not.toEqual([]);
      for (const pattern of says)
        expect(
          messages.some((message) => pattern.test(message)),
          `${pattern} in ${messages.join("\n")}`,
        ).toBe(true);
    }
  });

  const tenantOnly = fixtures.flatMap((name) => {
    const expected = EXPECTED[name];
    return typeof expected === "object" && "tenantOnly" in expected ? [{ name, ...expected.tenantOnly }] : [];
  });
  it.each(tenantOnly)("$name loads as a tenant's policy; as a route's it is refused because $why", ({ name, says }) => {
    const { tenant, operator } = loadBothWays(name);
    expect(tenant).toEqual([]);
    for (const pattern of says)
      expect(
        operator.some((message) => pattern.test(message)),
        operator.join("\n"),
      ).toBe(true);
  });
});
